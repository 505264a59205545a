// store-bench: commit throughput and latency of SQLiteTableStore on a real file, for group sizes 1, 16 and 64 with
// synchronous FULL and NORMAL. Not a test: it prints figures for a person to read.
//
//   swift build -c release --product store-bench && .build/release/store-bench [--seconds S] [--dir DIRECTORY]
//       [--inline-checkpoints]
//
// Each group spreads its records over 16 tables, as 16 writers would; every record carries a ref (and so an ack)
// and every table takes a snapshot every 1,000 versions, as the server will.

import Foundation
import TableStore

struct Settings {
    var seconds = 2.0
    var directory = FileManager.default.temporaryDirectory.path
    var backgroundCheckpoint = true

    init(arguments: [String]) {
        var rest = arguments.dropFirst()
        while let flag = rest.popFirst() {
            switch flag {
            case "--seconds" where rest.first.flatMap(Double.init) != nil: seconds = Double(rest.removeFirst())!
            case "--dir" where !rest.isEmpty: directory = rest.removeFirst()
            case "--inline-checkpoints": backgroundCheckpoint = false
            default:
                print("usage: store-bench [--seconds S] [--dir DIRECTORY] [--inline-checkpoints]")
                exit(2)
            }
        }
    }
}

struct Result {
    var commits = 0
    var records = 0
    var elapsed = Duration.zero
    var latencies: [Duration] = []

    func percentile(_ p: Double) -> Duration {
        let sorted = latencies.sorted()
        return sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
    }
}

let writers = 16
let snapshotInterval: Int64 = 1000
let batch =
    "{\"type\":\"update\",\"insertRows\":[{\"at\":[0,3],\"row\":{\"id\":\"r-0001\",\"value\":\"Arizona\"}}],"
    + "\"deleteRows\":[],\"moveRows\":[],\"reloadRows\":[]}"
let ack = "{\"type\":\"ack\",\"ref\":\"r-000000\",\"table\":\"t\",\"version\":1,\"created\":[\"r-0001\"]}"
let snapshot = String(repeating: "{\"id\":\"r-0001\",\"value\":\"Arizona\"},", count: 200)

func run(synchronous: TableStoreOptions.Synchronous, groupSize: Int, settings: Settings) throws -> Result {
    let path = "\(settings.directory)/store-bench-\(ProcessInfo.processInfo.processIdentifier).db"
    defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
    var options = TableStoreOptions()
    options.synchronous = synchronous
    options.snapshotInterval = snapshotInterval
    options.backgroundCheckpoint = settings.backgroundCheckpoint
    let store = try SQLiteTableStore(path: path, options: options)
    let tables = (0..<writers).map { "table-\($0)" }
    for table in tables {
        try store.createTable(table, epoch: 1, rules: "{}", snapshot: snapshot, created: 0)
    }

    var versions = [Int64](repeating: 0, count: writers)
    var result = Result()
    var next = 0
    let clock = ContinuousClock()
    let start = clock.now
    while clock.now - start < .seconds(settings.seconds) {
        var group: [CommitRecord] = []
        group.reserveCapacity(groupSize)
        for _ in 0..<groupSize {
            let writer = next % writers
            next += 1
            versions[writer] += 1
            let version = versions[writer]
            group.append(
                CommitRecord(
                    table: tables[writer], version: version, batch: batch, originClient: "client-\(writer)",
                    originRef: "r-\(version)", time: 1_700_000_000_000, ack: ack,
                    snapshot: version % snapshotInterval == 0 ? snapshot : nil))
        }
        let before = clock.now
        try store.commit(group)
        result.latencies.append(clock.now - before)
        result.commits += 1
        result.records += groupSize
    }
    result.elapsed = clock.now - start
    try store.close()
    return result
}

func microseconds(_ duration: Duration) -> String {
    String(format: "%8.1f", duration / .microseconds(1))
}

let settings = Settings(arguments: CommandLine.arguments)
print(
    "SQLiteTableStore commit benchmark: \(settings.seconds) s per row, files in \(settings.directory), \(writers) tables, "
        + (settings.backgroundCheckpoint ? "background" : "inline") + " checkpoints")
print("sync    group   commits/s   records/s   mean µs    p50 µs    p99 µs")
for synchronous in [TableStoreOptions.Synchronous.full, .normal] {
    for groupSize in [1, 16, 64] {
        let result = try run(synchronous: synchronous, groupSize: groupSize, settings: settings)
        let seconds = result.elapsed / .seconds(1)
        print(
            String(
                format: "%-6@ %6d %11.0f %11.0f  %@  %@  %@", synchronous.rawValue, groupSize,
                Double(result.commits) / seconds, Double(result.records) / seconds,
                microseconds(result.elapsed / result.commits), microseconds(result.percentile(0.5)),
                microseconds(result.percentile(0.99))))
    }
}
