// store-bench: commit throughput, latency and CPU of SQLiteTableStore on a real file, for group sizes 1, 16 and 64
// (or --groups) with synchronous FULL and NORMAL. Not a test: it prints figures for a person to read.
//
//   swift build -c release --product store-bench && .build/release/store-bench [--seconds S] [--dir DIRECTORY]
//       [--inline-checkpoints] [--tables N] [--groups 64,128,256]
//
// Each group's records come from 16 writers, each its own client, spread over 16 tables (or --tables N: writer i on
// table i mod N; `--tables 1` is the server's durable benchmark on one table); every record carries a ref (and so an
// ack) and every table takes a snapshot every 1,000 versions, as the server does. CPU is the process's user and
// system time (the background checkpointer's included) over the records committed.

import Foundation
import TableStore

struct Settings {
    var seconds = 2.0
    var directory = FileManager.default.temporaryDirectory.path
    var backgroundCheckpoint = true
    var tables = 16
    var groups = [1, 16, 64]

    init(arguments: [String]) {
        var rest = arguments.dropFirst()
        while let flag = rest.popFirst() {
            switch flag {
            case "--seconds" where rest.first.flatMap(Double.init) != nil: seconds = Double(rest.removeFirst())!
            case "--dir" where !rest.isEmpty: directory = rest.removeFirst()
            case "--inline-checkpoints": backgroundCheckpoint = false
            case "--tables" where (1...writers).contains(rest.first.flatMap { Int($0) } ?? 0):
                tables = Int(rest.removeFirst())!
            case "--groups" where !rest.isEmpty:
                groups = rest.removeFirst().split(separator: ",").compactMap { Int($0) }.filter { $0 > 0 }
                if groups.isEmpty { fallthrough }
            default:
                print(
                    "usage: store-bench [--seconds S] [--dir DIRECTORY] [--inline-checkpoints] [--tables 1...16]"
                        + " [--groups 1,16,64]")
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
    /// The process's user and system CPU time over the run, in seconds.
    var user = 0.0
    var system = 0.0

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
    let tables = (0..<settings.tables).map { "table-\($0)" }
    for table in tables {
        try store.createTable(table, epoch: 1, rules: "{}", snapshot: snapshot, created: 0)
    }

    var versions = [Int64](repeating: 0, count: tables.count)
    var result = Result()
    var next = 0
    let clock = ContinuousClock()
    let cpuBefore = cpuTime()
    let start = clock.now
    while clock.now - start < .seconds(settings.seconds) {
        var group: [CommitRecord] = []
        group.reserveCapacity(groupSize)
        for _ in 0..<groupSize {
            let writer = next % writers
            let table = writer % tables.count
            next += 1
            versions[table] += 1
            let version = versions[table]
            group.append(
                CommitRecord(
                    table: tables[table], version: version, batch: batch, originClient: "client-\(writer)",
                    originRef: "r-\(next)", time: 1_700_000_000_000, ack: ack,
                    snapshot: version % snapshotInterval == 0 ? snapshot : nil))
        }
        let before = clock.now
        try store.commit(group)
        result.latencies.append(clock.now - before)
        result.commits += 1
        result.records += groupSize
    }
    result.elapsed = clock.now - start
    let cpuAfter = cpuTime()
    (result.user, result.system) = (cpuAfter.user - cpuBefore.user, cpuAfter.system - cpuBefore.system)
    try store.close()
    return result
}

/// The process's user and system CPU time so far, in seconds.
func cpuTime() -> (user: Double, system: Double) {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
    return (seconds(usage.ru_utime), seconds(usage.ru_stime))
}

func microseconds(_ duration: Duration) -> String {
    String(format: "%8.1f", duration / .microseconds(1))
}

let settings = Settings(arguments: CommandLine.arguments)
print(
    "SQLiteTableStore commit benchmark: \(settings.seconds) s per row, files in \(settings.directory), \(writers) writers"
        + " on \(settings.tables) tables, " + (settings.backgroundCheckpoint ? "background" : "inline") + " checkpoints"
)
print("sync    group   commits/s   records/s   mean µs    p50 µs    p99 µs   CPU µs/record (user + system)")
for synchronous in [TableStoreOptions.Synchronous.full, .normal] {
    for groupSize in settings.groups {
        let result = try run(synchronous: synchronous, groupSize: groupSize, settings: settings)
        let seconds = result.elapsed / .seconds(1)
        let records = Double(result.records)
        print(
            String(
                format: "%-6@ %6d %11.0f %11.0f  %@  %@  %@   %6.2f (%.2f + %.2f)", synchronous.rawValue, groupSize,
                Double(result.commits) / seconds, records / seconds,
                microseconds(result.elapsed / result.commits), microseconds(result.percentile(0.5)),
                microseconds(result.percentile(0.99)), (result.user + result.system) * 1e6 / records,
                result.user * 1e6 / records, result.system * 1e6 / records))
    }
}
