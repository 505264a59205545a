// history-bench: how long the table at a past version takes to answer, and what history costs on disk. Not a
// test: it prints figures for a person to read.
//
//   swift build -c release --product history-bench && .build/release/history-bench [--rows N] [--changes N]
//       [--back N] [--reads N] [--dir DIRECTORY]
//
// A real server (snapshots every 1,000 versions, synchronous NORMAL to set up faster) on a temporary file; a table
// of --rows rows (default 10,000) takes --changes single-row changes (default 11,000: edits, moves, inserts and
// deletes) from 16 pipelined writers. Then a client asks for the table --back versions behind the latest (default
// 1,000) --reads times, and at the kept version behind that with the most log to replay (999 after a snapshot):
// the first read parses the snapshot, the later ones find it parsed. The same reads are timed in-process without
// that cache (the store's read of snapshot and log, parse and replay, encoding, the client's decoding), and the
// log's and snapshots' pages per 1,000 changes are measured with history kept in full.

import Foundation
import Logging
import TableModel
import TableStore
import TablecastClient
import TablecastProtocol
import TablecastServer

struct Settings {
    var rows = 10_000
    var changes = 11_000
    var back: UInt64 = 1_000
    var reads = 30
    var directory = FileManager.default.temporaryDirectory.path

    init(arguments: [String]) {
        var rest = arguments.dropFirst()
        while let flag = rest.popFirst() {
            switch flag {
            case "--rows" where rest.first.flatMap(Int.init) != nil: rows = Int(rest.removeFirst())!
            case "--changes" where rest.first.flatMap(Int.init) != nil: changes = Int(rest.removeFirst())!
            case "--back" where rest.first.flatMap(UInt64.init) != nil: back = UInt64(rest.removeFirst())!
            case "--reads" where rest.first.flatMap(Int.init) != nil: reads = Int(rest.removeFirst())!
            case "--dir" where !rest.isEmpty: directory = rest.removeFirst()
            default:
                print("usage: history-bench [--rows N] [--changes N] [--back N] [--reads N] [--dir DIRECTORY]")
                exit(2)
            }
        }
    }
}

func milliseconds(_ duration: Duration) -> Double {
    duration / .milliseconds(1)
}

/// "median 12.3 ms, p90 14.0 ms, max 15.2 ms" of `samples`.
func summary(_ samples: [Duration]) -> String {
    let sorted = samples.sorted()
    let at = { (p: Double) in milliseconds(sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]) }
    return String(format: "median %.1f ms, p90 %.1f ms, max %.1f ms", at(0.5), at(0.9), milliseconds(sorted.last!))
}

/// Bytes of pages each table of the file takes (SQLite's dbstat), by table name.
func pageBytes(_ path: String) throws -> [String: Int64] {
    let connection = try SQLiteConnection(path: path, flags: [.readOnly])
    defer { connection.close() }
    let rows = try connection.rows("SELECT name, sum(pgsize) FROM dbstat GROUP BY name") {
        ($0.text(at: 0), $0.int64(at: 1))
    }
    return Dictionary(rows, uniquingKeysWith: +)
}

func startServer(_ path: String) async throws -> TableServer {
    var logger = Logger(label: "history-bench")
    logger.logLevel = .warning
    var configuration = TableServer.Configuration(
        port: 0, databasePath: path, synchronous: .normal, snapshotInterval: 1000, intentsPerSecond: 10_000_000,
        maxQueuedIntents: 1_000_000)
    configuration.historyRetention = .all
    return try await TableServer.start(configuration, logger: logger)
}

/// Creates `table` with `rows` rows, then makes `changes` single-row changes.
func populate(_ path: String, table: String, rows: Int, changes: Int) async throws {
    var server = try await startServer(path)
    let client = try TablecastClient(configuration: .init(url: "ws://127.0.0.1:\(server.port)/", clientID: "setup"))
    client.connect()
    let contents = [SectionContent(header: "Rows", rows: (0..<rows).map { RowContent(value: .string("row \($0)")) })]
    try await client.createTable(table, sections: contents)
    await client.close()
    await server.shutdown()

    server = try await startServer(path)
    let url = "ws://127.0.0.1:\(server.port)/"
    let writers = 16
    try await withThrowingTaskGroup(of: Void.self) { group in
        for writer in 0..<writers {
            group.addTask {
                let client = try TablecastClient(
                    configuration: .init(url: url, clientID: "writer-\(writer)", name: "Writer \(writer)"))
                client.connect()
                var n = writer
                while n < changes {
                    // Within the first half: concurrent inserts and deletes move the count by a few rows either way.
                    let at = { (k: Int) in RowPath(section: 0, row: (n &* k) % (rows / 2)) }
                    switch n % 20 {
                    case 0: try await client.insert(table, at: at(7), value: .string("new \(n)"), base: .current)
                    case 10: try await client.delete(table, at: at(13), base: .current)
                    case 5, 15: try await client.move(table, from: at(31), to: at(37), base: .current)
                    default: try await client.edit(table, at: at(7919), value: .string("edit \(n)"), base: .current)
                    }
                    n += writers
                }
                await client.close()
            }
        }
        try await group.waitForAll()
    }
    await server.shutdown()
}

let settings = Settings(arguments: CommandLine.arguments)
let path = "\(settings.directory)/history-bench-\(ProcessInfo.processInfo.processIdentifier).db"
defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }

print("history-bench: \(settings.rows) rows, \(settings.changes) changes, snapshots every 1,000 versions, file \(path)")
let clock = ContinuousClock()
let setupStart = clock.now
try await populate(path, table: "big", rows: settings.rows, changes: settings.changes)
print(String(format: "set up in %.1f s", milliseconds(clock.now - setupStart) / 1000))
let pages = try pageBytes(path)
let thousands = Double(settings.changes) / 1000
let log = Double(pages["log"] ?? 0) / thousands
let snapshots = Double(pages["snapshots"] ?? 0) / (thousands + 1)
print(
    String(
        format: "disk per 1,000 changes: log %.0f KiB + one snapshot of the %d-row table %.0f KiB = %.0f KiB "
            + "(refs, bounded per client whatever the history, %.0f KiB in all)",
        log / 1024, settings.rows, snapshots / 1024, (log + snapshots) / 1024, Double(pages["refs"] ?? 0) / 1024))

let server = try await startServer(path)
let client = try TablecastClient(configuration: .init(url: "ws://127.0.0.1:\(server.port)/", clientID: "reader"))
client.connect()
let latest = try await client.history("big", limit: 1).version
let back = latest - settings.back
// The kept version at or behind `back` with the most log to replay: just below a snapshot.
let worst = back % 1000 == 999 ? back : (back / 1000) * 1000 - 1
for (label, version) in [("\(settings.back) back", back), ("\(latest - worst) back, 999 replays", worst)] {
    var samples: [Duration] = []
    var rows = 0
    for _ in 0..<settings.reads {
        let start = clock.now
        let past = try await client.table("big", atVersion: version)
        samples.append(clock.now - start)
        rows = past.table.sections.reduce(0) { $0 + $1.rows.count }
    }
    // The first read parses the snapshot; the server keeps it parsed for the reads after it.
    print(
        String(
            format: "table at v\(version) of v\(latest) (\(label), \(rows) rows) over the wire: first %.1f ms, then ",
            milliseconds(samples[0])) + summary(Array(samples.dropFirst())))
}
await client.close()
await server.shutdown()

// The same reads inside the process, split into the store's read and the rebuild.
var options = TableStoreOptions()
options.readOnly = true
let store = try SQLiteTableStore(path: path, options: options)
for version in [back, worst] {
    var reads: [Duration] = []
    var rebuilds: [Duration] = []
    var encodings: [Duration] = []
    var decodings: [Duration] = []
    for _ in 0..<settings.reads {
        let start = clock.now
        let state = try store.state("big", at: Int64(version))
        let read = clock.now
        var table = try Table(json: JSONValue(parsing: state.snapshot!.body))
        for entry in state.log { try table.apply(Batch(json: JSONValue(parsing: entry.batch))) }
        precondition(table.version == version)
        let rebuilt = clock.now
        let bytes = ServerMessage.historicalSnapshot(
            ref: "r", table: "big", version: version, epoch: "e", rules: table.rules, sections: table.sections
        ).encoded
        let encoded = clock.now
        _ = try ServerMessage.decode(bytes)
        reads.append(read - start)
        rebuilds.append(rebuilt - read)
        encodings.append(encoded - rebuilt)
        decodings.append(clock.now - encoded)
    }
    print("v\(version): store read \(summary(reads))")
    print("    parse and replay \(summary(rebuilds))")
    print("    encode the snapshot message \(summary(encodings)); the client's decoding \(summary(decodings))")
}
try store.close()
