import ArgumentParser
import Foundation
import TableModel
import TableStore

/// `tablecast backup`: a consistent copy of a (live) server's database.
struct BackupCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Copy a server's database consistently into a SQLite file while it keeps serving.",
        discussion: """
            The copy is the database as of one commit (SQLite's online backup API; with PostgreSQL, one \
            REPEATABLE READ transaction); the servers are not paused. Prints one JSON line: the copy's path, its \
            size and each table's version. Restore by starting `tablecast serve --db BACKUP` (or copying it into \
            place while the server is stopped); a copy of a PostgreSQL store is a SQLite file too, so that moves \
            off PostgreSQL.
            """)

    @Option(
        help:
            "The server's SQLite database file, or postgresql://USER@HOST:PORT/DB. Default: $TABLECAST_DB, else tablecast.db."
    )
    var db = ProcessInfo.processInfo.environment["TABLECAST_DB"] ?? "tablecast.db"

    @Option(help: "The new file to write (must not exist).")
    var to: String

    func run() throws {
        let location = StoreLocation(db)
        let report: BackupReport
        if let problem = Self.problem(writing: to) ?? (location.isShared ? nil : Self.problem(reading: db)) {
            Output.error("tablecast backup: \(problem)")
            throw ExitCode(1)
        }
        do {
            report = try backupStore(location, to: to)
        } catch let error as StoreError {
            Output.error("tablecast backup: \(error)")
            throw ExitCode([.notADatabase, .foreign, .corrupt].contains(error.kind) ? 3 : 1)
        }
        let tables = report.tables.map { info in
            JSONValue.object(["table": .string(info.name), "version": .number(Double(info.version))])
        }
        Output.line(
            JSONValue.object(["backup": .string(to), "bytes": .number(Double(report.bytes)), "tables": .array(tables)])
                .jsonText)
    }

    /// Why the copy cannot be written at `path`, in the words `serve` uses, before SQLite's "unable to open".
    private static func problem(writing path: String) -> String? {
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path) {
            return "\(path) already exists; a backup never replaces a file"
        }
        guard FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory) else {
            return "the folder \(folder) does not exist"
        }
        guard isDirectory.boolValue else { return "\(folder) is not a folder" }
        guard access(folder, W_OK) == 0 else {
            return "cannot write in the folder \(folder): \(String(cString: strerror(errno)))"
        }
        return nil
    }

    /// Why the database at `path` cannot be copied: a mistyped path must not look like an empty database.
    private static func problem(reading path: String) -> String? {
        guard FileManager.default.fileExists(atPath: path) else { return "no database at \(path)" }
        guard access(path, R_OK) == 0 else { return "cannot read \(path): \(String(cString: strerror(errno)))" }
        return nil
    }
}
