import ArgumentParser
import TableModel
import TableStore

/// `tablecast backup`: a consistent copy of a (live) server's database.
struct BackupCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Copy a server's SQLite database consistently while it keeps serving.",
        discussion: """
            The copy is the database as of one commit (SQLite's online backup API); the server is not paused. \
            Prints one JSON line: the copy's path, its size and each table's version. Restore by starting \
            `tablecast serve --db BACKUP` (or copying it into place while the server is stopped).
            """)

    @Option(help: "The server's SQLite database file.")
    var db = "tablecast.db"

    @Option(help: "The new file to write (must not exist).")
    var to: String

    func run() throws {
        guard !db.hasPrefix("postgresql://") && !db.hasPrefix("postgres://") else {
            Output.error("tablecast backup: backup copies SQLite files; back a PostgreSQL store up with pg_dump")
            throw ExitCode(1)
        }
        let report: TableStore.BackupReport
        do {
            report = try TableStore.backup(from: db, to: to)
        } catch let error as StoreError {
            Output.error("tablecast backup: \(error)")
            throw ExitCode(error.kind == .io ? 1 : 3)
        }
        let tables = report.tables.map { info in
            JSONValue.object(["table": .string(info.name), "version": .number(Double(info.version))])
        }
        Output.line(
            JSONValue.object(["backup": .string(to), "bytes": .number(Double(report.bytes)), "tables": .array(tables)])
                .jsonText)
    }
}
