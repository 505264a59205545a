import ArgumentParser
import Foundation
import TableStore

/// `tablecast compact`: prunes every table's log back to the retention behind its latest snapshot.
struct CompactCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "compact",
        abstract: "Prune every table's log to what --history and --history-retention keep, then VACUUM.",
        discussion: """
            Entries go a snapshot at a time: the log keeps everything after the newest snapshot at or below the \
            oldest version to keep. The server also prunes whenever it stores a snapshot. A SQLite file: run this \
            on a stopped server's file (it refuses a file a server holds); VACUUM then gives the space back to the \
            file system (--no-vacuum skips it: it rewrites the whole file). PostgreSQL \
            (postgresql://USER@HOST:PORT/DB): safe while the nodes run; VACUUM there makes the space reusable.
            """)

    @Option(
        help: "The SQLite database file, or postgresql://USER@HOST:PORT/DB. Default: $TABLECAST_DB, else tablecast.db.")
    var db = ProcessInfo.processInfo.environment["TABLECAST_DB"] ?? "tablecast.db"

    @Option(help: "Versions to keep behind each table's latest version, as `serve --history` counts them.")
    var history = 10_000

    @Option(
        help: ArgumentHelp(
            "History kept readable per table, as `serve --history-retention` (versions, an age such as 30d, both, or all).",
            valueName: "retention"))
    var historyRetention = HistoryRetention(versions: 10_000)

    @Flag(inversion: .prefixedNo, help: "VACUUM a SQLite file afterwards, so that it shrinks.")
    var vacuum = true

    func validate() throws {
        guard history >= 0 else { throw ValidationError("--history must be 0 or more") }
    }

    func run() throws {
        var options = TableStoreOptions()
        // Both bounds count back from each table's latest version (the store's snapshot-relative count is off).
        options.retention = .versionsBeforeSnapshot(0)
        options.history =
            historyRetention == .all
            ? .all
            : HistoryRetention(versions: max(historyRetention.versions ?? 0, Int64(history)), age: historyRetention.age)
        let location = StoreLocation(db)
        if location.isShared {
            return try report {
                let store = try openStore(location, options: options)
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
        let before = Self.fileSize(db)
        try report {
            let store = try openStore(location, options: options)
            let removed = try store.compactAll()
            try store.close()
            return (removed, db)
        }
        guard vacuum else { return }
        do {
            try vacuumStore(location)
        } catch {
            throw fail("VACUUM failed (the log is pruned all the same): \(error)", exit: 1)
        }
        print("vacuumed \(db): \(before) → \(Self.fileSize(db)) bytes")
    }

    private static func fileSize(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int) ?? 0
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
