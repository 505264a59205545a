import ArgumentParser

/// `tablecast`: the shared-table server and its tools.
@main
struct Tablecast: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tablecast",
        abstract: "A server for shared, live-edited tables that behave like iOS table views.",
        version: "1.0.0",
        subcommands: [
            ServeCommand.self, CompactCommand.self, BackupCommand.self, WatchCommand.self, InsertCommand.self, DeleteCommand.self,
            MoveCommand.self, EditCommand.self, BatchCommand.self, TablesCommand.self, ExportCommand.self,
            ImportCommand.self, LoadCommand.self,
        ])
}
