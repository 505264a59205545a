import ArgumentParser
import Foundation

/// `tablecast`: the shared-table server and its tools.
@main
struct Tablecast: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tablecast",
        abstract: "A server for shared, live-edited tables that behave like iOS table views.",
        version: TablecastVersion.current,
        subcommands: [
            ServeCommand.self, CompactCommand.self, BackupCommand.self, WatchCommand.self, InsertCommand.self,
            DeleteCommand.self,
            MoveCommand.self, EditCommand.self, PatchCommand.self, BatchCommand.self, TablesCommand.self,
            ExportCommand.self,
            ImportCommand.self, SectionCommand.self, LoadCommand.self, HistoryCommand.self,
        ])

    /// ArgumentParser's own `main`, except that a `ValidationError` thrown by a subcommand's `run` shows that
    /// subcommand's usage, as one thrown while parsing does, rather than the top-level one, and that the process
    /// ends through ``terminateProcess(_:)``.
    static func main() async {
        let command: any ParsableCommand
        do {
            command = try await asyncParseAsRoot()
        } catch {
            terminate(reporting: error)
        }
        do {
            var command = command
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let error as ValidationError {
            let type = Swift.type(of: command)
            let name = commandPath(to: type, from: self)?.joined(separator: " ") ?? "tablecast"
            FileHandle.standardError.write(
                Data(
                    """
                    Error: \(error.message)
                    Usage: \(usageString(for: type))
                      See '\(name) --help' for more information.

                    """.utf8))
            terminateProcess(ExitCode.validationFailure.rawValue)
        } catch {
            terminate(reporting: error)
        }
        terminateProcess(0)
    }

    /// Prints `error` as ArgumentParser would (usage, help or a message) and ends the process with its code.
    private static func terminate(reporting error: any Error) -> Never {
        let message = fullMessage(for: error)
        if !message.isEmpty {
            let code = exitCode(for: error)
            let output = code == .success ? FileHandle.standardOutput : FileHandle.standardError
            output.write(Data((message + "\n").utf8))
        }
        terminateProcess(exitCode(for: error).rawValue)
    }
}

/// Ends the process with `code` once every C stream is flushed (`fflush(NULL)`), without running global destructors:
/// a command that gave up on a server leaves its transport's threads running, and `exit` would tear down the
/// runtime's statics under them (a crash at exit, seen as signal 11 instead of the command's code).
func terminateProcess(_ code: Int32) -> Never {
    fflush(nil)
    _exit(code)
}

extension Tablecast {
    /// The command names from `root` down to `type`, e.g. `["tablecast", "tables", "create"]`.
    private static func commandPath(to type: any ParsableCommand.Type, from root: any ParsableCommand.Type) -> [String]?
    {
        let name = root.configuration.commandName ?? "\(root)"
        if root == type { return [name] }
        for subcommand in root.configuration.subcommands {
            if let path = commandPath(to: type, from: subcommand) { return [name] + path }
        }
        return nil
    }
}
