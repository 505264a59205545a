import ArgumentParser
import Foundation
import TableStore

/// `tablecast compact`: prunes every table's log back to the retention behind its latest snapshot.
struct CompactCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "compact",
        abstract: "Prune the log of every table to the updates kept behind its latest snapshot.",
        discussion: """
            The server also prunes automatically whenever it stores a snapshot. A SQLite file: run this on a \
            stopped server's file (it refuses a file a server holds). PostgreSQL (postgresql://USER@HOST:PORT/DB): \
            safe while the nodes run; it also VACUUMs the log.
            """)

    @Option(help: "The SQLite database file, or postgresql://USER@HOST:PORT/DB. Default: $TABLECAST_DB, else tablecast.db.")
    var db = ProcessInfo.processInfo.environment["TABLECAST_DB"] ?? "tablecast.db"

    @Option(help: "Log versions to keep behind each table's latest snapshot.")
    var history = 10_000

    @Option(
        help: ArgumentHelp(
            "History kept readable per table, as `serve --history-retention` (versions, an age such as 30d, both, or all).",
            valueName: "retention"))
    var historyRetention = HistoryRetention(versions: 10_000)

    func run() throws {
        var options = TableStoreOptions()
        options.retention = .versionsBeforeSnapshot(Int64(history))
        options.history = historyRetention
        if db.hasPrefix("postgresql://") || db.hasPrefix("postgres://") {
            return try report {
                let store = try PostgresTableStore(url: db, options: options)
                return (try store.compactAll(), store.location)
            }
        }
        // A mistyped path must not become a new, empty database.
        guard FileManager.default.fileExists(atPath: db) else { throw fail("no database at \(db)", exit: 1) }
        let lock: DatabaseLock
        do {
            lock = try DatabaseLock(database: db)
        } catch {
            throw fail("\(error)", exit: 1)
        }
        defer { lock.release() }
        try report {
            let store = try TableStore(path: db, options: options)
            let removed = try store.compactAll()
            try store.close()
            return (removed, db)
        }
    }

    /// Runs `compact` and prints what it removed; a store that is not a usable Tablecast database exits 3.
    private func report(_ compact: () throws -> (removed: Int64, location: String)) throws {
        do {
            let (removed, location) = try compact()
            print("removed \(removed) log entries from \(location)")
        } catch let error as StoreError {
            let unusable = [.notADatabase, .foreign, .corrupt].contains(error.kind)
            throw fail(unusable ? "\(error)" : error.message, exit: unusable ? 3 : 1)
        }
    }

    private func fail(_ message: String, exit code: Int32) -> ExitCode {
        FileHandle.standardError.write(Data("tablecast compact: \(message)\n".utf8))
        return ExitCode(code)
    }
}
