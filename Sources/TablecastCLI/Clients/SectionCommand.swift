import ArgumentParser
import TableModel

/// `tablecast section add|delete|move`: sections without writing batch JSON.
struct SectionCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "section", abstract: "Add, delete or move a section; prints the ack.",
        subcommands: [Add.self, Delete.self, Move.self])

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add", abstract: "Add an empty section (at the end unless --at); prints the ack.")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var intent: IntentOptions
        @Option(help: "Where it goes: a section index (default: after the last).")
        var at: Int?
        @Option(help: "Its header.")
        var header: String?
        @Option(help: "Its footer.")
        var footer: String?

        func validate() throws {
            if let at, at < 0 { throw ValidationError("--at must be 0 or more") }
        }

        func run() async throws {
            let (table, at) = (intent.table, at)
            // Without --at: the section count is read first, so "at the end" means the table as it is now.
            let index: Int
            if let at {
                index = at
            } else {
                index = try await connection.withClient { try await $0.subscribe(table).table.sections.count }
            }
            try await intent.send(
                .insertSection(at: index, section: SectionContent(header: header, footer: footer)),
                connection: connection)
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "delete", abstract: "Delete a section and its rows; prints the ack.")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var intent: IntentOptions
        @Option(help: "The section's index.")
        var at: Int
        @Option(help: "The section's id, checked by the server (conflict if another section is there).")
        var section: String?

        func run() async throws {
            try await intent.send(.deleteSection(SectionRef(at, id: section)), connection: connection)
        }
    }

    struct Move: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "move", abstract: "Move a section; prints the ack.")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var intent: IntentOptions
        @Option(help: "The section's index.")
        var from: Int
        @Option(help: "Its new index.")
        var to: Int
        @Option(help: "The section's id, checked by the server.")
        var section: String?

        func run() async throws {
            try await intent.send(.moveSection(from: SectionRef(from, id: section), to: to), connection: connection)
        }
    }
}
