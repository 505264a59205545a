import ArgumentParser
import Foundation
import TableModel
import TablecastClient
import TablecastProtocol

/// The options of every scripted edit.
struct IntentOptions: ParsableArguments {
    @Option(help: "The table.")
    var table: String

    @Option(help: "The version the index paths refer to (default: none, the table as it is now).")
    var base: UInt64?

    @Option(help: "The idempotency key: re-running with the same --client and --ref is never applied twice.")
    var ref: String?
}

extension IntentOptions {
    /// Sends `intent` and prints the ack as a JSON line.
    func send(_ intent: Intent, connection: ConnectionOptions) async throws {
        let table = table
        let base: TablecastClient.Base = base.map { .version($0) } ?? .current
        let ref = ref
        let ack = try await connection.withClient { client in
            try await client.send(intent, to: table, base: base, ref: ref)
        }
        Output.line(ServerMessage.ack(ack).json.jsonText)
    }
}

struct InsertCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "insert", abstract: "Insert a row; prints the ack (exit 1 with the error when refused).")
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var intent: IntentOptions
    @Option(help: "Where the row goes: section,row.")
    var at: IndexPathArgument
    @Argument(help: "The value: JSON, or else the text as a string.")
    var value: String
    @Option(help: "Whether the row can be deleted and edited (false needs admin).")
    var editable = true
    @Option(help: "Whether the row can be moved (false needs admin).")
    var movable = true

    func run() async throws {
        try await intent.send(
            .insert(at: at.path, row: RowContent(value: jsonArgument(value), editable: editable, movable: movable)),
            connection: connection)
    }
}

struct DeleteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "delete", abstract: "Delete a row; prints the ack.")
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var intent: IntentOptions
    @Option(help: "The row: section,row.")
    var at: IndexPathArgument
    @Option(help: "The row's id, checked by the server (conflict if another row is there).")
    var row: String?

    func run() async throws {
        try await intent.send(.delete(RowRef(at.path, id: row)), connection: connection)
    }
}

struct MoveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "move", abstract: "Move a row; prints the ack.")
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var intent: IntentOptions
    @Option(help: "The row: section,row.")
    var from: IndexPathArgument
    @Option(help: "Its destination: section,row (the rules may retarget it: see the ack's resolved).")
    var to: IndexPathArgument
    @Option(help: "The row's id, checked by the server.")
    var row: String?

    func run() async throws {
        try await intent.send(.move(from: RowRef(from.path, id: row), to: to.path), connection: connection)
    }
}

// `edit` (a row's new value, or the live editor without --at) is EditCommand in Edit/EditCommand.swift.

struct PatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "patch",
        abstract: "Change some fields of a row's value (a JSON merge patch); prints the ack.",
        discussion: """
            The patch is merged into the row's value as the server has it (RFC 7386): the fields it names are set, \
            null removes one, nested objects merge, and fields it does not name keep whatever others wrote, e.g.:

            tablecast patch --table groceries --at 0,1 '{"done": true}'
            """)
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var intent: IntentOptions
    @Option(help: "The row: section,row.")
    var at: IndexPathArgument
    @Option(help: "The row's id, checked by the server.")
    var row: String?
    @Argument(help: "The merge patch: JSON.")
    var patch: String

    func run() async throws {
        let value: JSONValue
        do {
            value = try JSONValue(parsing: patch)
        } catch {
            throw ValidationError("the patch is not JSON: \(error.description)")
        }
        try await intent.send(.patch(RowRef(at.path, id: row), patch: value), connection: connection)
    }
}

struct BatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "batch", abstract: "Send a batch (beginUpdates…endUpdates); prints the ack.",
        discussion: """
            FILE (or - for stdin) holds a JSON object with any of the eight lists (and patchRows) in their wire \
            shapes, e.g.:

            {"deleteRows": [{"at": [0, 2]}], "insertRows": [{"at": [0, 0], "value": "Alaska"}]}
            """)
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var intent: IntentOptions
    @Argument(help: "The batch's JSON file, or - for stdin.")
    var file: String

    func run() async throws {
        let bytes = try readInput(file)
        guard case .object(var members) = try JSONValue(parsing: bytes) else {
            throw ValidationError("the batch must be a JSON object of lists")
        }
        members["type"] = "batch"
        members["table"] = .string(intent.table)
        let message: ClientMessage
        do {
            message = try ClientMessage.decode(.object(members))
        } catch {
            throw ValidationError("not a valid batch: \(error.message)")
        }
        guard case .intent(_, _, let batch) = message.body else { throw ValidationError("not a batch") }
        try await intent.send(batch, connection: connection)
    }
}

/// The bytes of a file, or of stdin for `-`.
func readInput(_ path: String) throws -> [UInt8] {
    if path == "-" { return Array(FileHandle.standardInput.readDataToEndOfFile()) }
    return try readFile(path, what: "")
}
