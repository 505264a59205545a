import ArgumentParser
import Foundation
import TableModel
import TablecastClient
import TablecastProtocol

/// `tablecast tables`: list, create, drop, and set rules.
struct TablesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tables", abstract: "List, create and drop tables, and set their rules.",
        subcommands: [List.self, Create.self, Drop.self, Rules.self], defaultSubcommand: List.self)

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list", abstract: "Print every table as a JSON line: {table, version, epoch, subscribers}.")
        @OptionGroup var connection: ConnectionOptions

        func run() async throws {
            let tables = try await connection.withClient { try await $0.listTables() }
            for table in tables {
                Output.line(
                    JSONValue.object([
                        "table": .string(table.table), "version": .number(Double(table.version)),
                        "epoch": .string(table.epoch), "subscribers": .number(Double(table.subscribers)),
                    ]).jsonText)
            }
        }
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "create", abstract: "Create a table; prints the ack.")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var selection: TableSelection
        @Option(
            help:
                #"Sections as JSON: [{"header": "Fruit", "rows": [{"value": "fig"}]}]. Default: one empty section ([] for none)."#
        )
        var sections: String?
        @Option(help: #"Rules as JSON: {"moves": "withinSection", "reserveLastRow": true}."#)
        var rules: String?

        func run() async throws {
            var members: [String: JSONValue] = ["type": "createTable", "table": .string(selection.name)]
            // One empty section by default: rows need a section to go in, and `insert --at 0,0` should just work.
            members["sections"] =
                try sections.map { try JSONValue(parsing: $0) } ?? .array([.object(["rows": .array([])])])
            if let rules { members["rules"] = try JSONValue(parsing: rules) }
            guard case .createTable(let name, let contents, let patch) = try decodeRequest(members) else { return }
            let ack = try await connection.withClient {
                try await $0.createTable(name, sections: contents, rules: patch)
            }
            Output.line(ServerMessage.ack(ack).json.jsonText)
        }
    }

    struct Drop: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "drop", abstract: "Drop a table; prints the ack.")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var selection: TableSelection

        func run() async throws {
            let table = selection.name
            let ack = try await connection.withClient { try await $0.dropTable(table) }
            Output.line(ServerMessage.ack(ack).json.jsonText)
        }
    }

    struct Rules: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rules", abstract: "Change some of a table's rules; prints the ack.")
        @OptionGroup var connection: ConnectionOptions
        @Option(help: "The table.")
        var table: String?
        @Argument(
            help: ArgumentHelp(
                #"The rules to change as JSON, e.g. {"moves": "none"} (after the table, without --table)."#,
                valueName: "rules"))
        var arguments: [String] = []

        func validate() throws {
            guard arguments.count == (table == nil ? 2 : 1) else {
                throw ValidationError("expected --table TABLE RULES (or TABLE RULES)")
            }
        }

        func run() async throws {
            let (table, rules) = (self.table ?? arguments[0], arguments[arguments.count - 1])
            let members: [String: JSONValue] = [
                "type": "setRules", "table": .string(table), "rules": try JSONValue(parsing: rules),
            ]
            guard case .setRules(let name, let patch) = try decodeRequest(members) else { return }
            let ack = try await connection.withClient { try await $0.setRules(name, patch) }
            Output.line(ServerMessage.ack(ack).json.jsonText)
        }
    }
}

/// Checks a request with the server's own decoder, so that a bad argument is refused before connecting.
func decodeRequest(_ members: [String: JSONValue]) throws -> ClientMessage.Body {
    do {
        return try ClientMessage.decode(.object(members)).body
    } catch {
        throw ValidationError(error.message)
    }
}

/// `tablecast export TABLE`: the table as JSON (`{table, rules, sections}`), for `tablecast import`.
struct ExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export", abstract: "Print a table as JSON {table, version, rules, sections} for import.")
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var selection: TableSelection
    @Option(help: "Export the table as it was at this kept version instead of now.")
    var atVersion: UInt64?

    func run() async throws {
        let (table, atVersion) = (selection.name, atVersion)
        let replica = try await connection.withClient { client in
            if let atVersion { return try await client.table(table, atVersion: atVersion) }
            return try await client.subscribe(table)
        }
        // New-section shapes (no ids): the importing server assigns its own.
        let sections = replica.table.sections.map { section in
            SectionContent(
                header: section.header, footer: section.footer,
                rows: section.rows.map {
                    RowContent(
                        value: $0.value, editable: $0.editable, movable: $0.movable, editingStyle: $0.editingStyle)
                }
            ).json
        }
        Output.line(
            JSONValue.object([
                "table": .string(table), "version": .number(Double(replica.version)), "rules": replica.table.rules.json,
                "sections": .array(sections),
            ]).jsonText)
    }
}

/// `tablecast import FILE`: creates a table from `tablecast export` output.
struct ImportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import", abstract: "Create a table from an export (FILE or - for stdin); prints the ack.")
    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The exported JSON file, or - for stdin.")
    var file: String
    @Option(name: .customLong("as"), help: "Create it under this name instead of the exported one.")
    var name: String?

    /// The fields `export` writes.
    static let exportKeys: Set<String> = ["table", "version", "rules", "sections"]

    func run() async throws {
        guard case .object(let exported) = try JSONValue(parsing: readInput(file)) else {
            throw ValidationError("\(file) is not a JSON object")
        }
        // As strict as the protocol: an unknown field is a mistake (a wrong file), not something to ignore.
        let unknown = Set(exported.keys).subtracting(Self.exportKeys).sorted()
        guard unknown.isEmpty else {
            throw ValidationError(
                "\(file) is not a tablecast export: unknown field\(unknown.count == 1 ? "" : "s") \(unknown.joined(separator: ", ")) (expected table, version, rules, sections)"
            )
        }
        guard exported["sections"] != nil else {
            throw ValidationError("\(file) is not a tablecast export: no sections")
        }
        var members: [String: JSONValue] = ["type": "createTable"]
        members["table"] = name.map(JSONValue.string) ?? exported["table"]
        members["sections"] = exported["sections"]
        members["rules"] = exported["rules"]
        guard case .createTable(let table, let sections, let rules) = try decodeRequest(members) else { return }
        let ack = try await connection.withClient { try await $0.createTable(table, sections: sections, rules: rules) }
        Output.line(ServerMessage.ack(ack).json.jsonText)
    }
}
