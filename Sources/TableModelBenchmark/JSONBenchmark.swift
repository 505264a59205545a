// The project's own JSON (TableModel's parser and writer, TablecastProtocol's decoding and encoding) against
// Foundation's JSONDecoder and JSONEncoder on the server's own messages: decoding client intents into values, and
// encoding the `update` and `ack` of every committed intent. Foundation works on Codable mirrors of the same wire
// shapes; its output is checked to be the same JSON as ours before anything is timed. Ours does more per
// message (it checks every field and names the bad one), so the comparison favours Foundation.

import Foundation
import TableModel
import TablecastProtocol

extension Benchmark {
    static func json() throws {
        let decodes: [(String, String)] = [
            (
                "edit intent",
                #"{"type":"edit","table":"groceries","base":41,"ref":"w3.17","at":[0,5],"row":"r42","value":{"item":"milk","qty":2}}"#
            ),
            (
                "insert intent",
                #"{"type":"insert","table":"groceries","base":41,"ref":"w3.18","at":[1,0],"value":"figs"}"#
            ),
            ("20-entry batch intent", batchIntent(entries: 20)),
        ]
        for (name, text) in decodes {
            let bytes = Array(text.utf8)
            let data = Data(bytes)
            let decoder = JSONDecoder()
            let theirs = try decoder.decode(WireIntent.self, from: data)
            guard case .intent(let table, let base, _) = try ClientMessage.decode(bytes).body, table == theirs.table,
                base == theirs.base
            else { fatalError("\(name): the two decoders disagree") }
            compare(
                "decode \(name) (\(bytes.count) bytes)",
                ours: { _ = try ClientMessage.decode(bytes) },
                foundation: { _ = try decoder.decode(WireIntent.self, from: data) })
        }

        let rowCount = 100
        let encodes: [(String, ServerMessage)] = [
            (
                "ack",
                .ack(.init(ref: "w3.18", table: "groceries", version: 42, created: ["r97"], resolved: [[1, 0]]))
            ),
            (
                "single-row update",
                .update(
                    .init(
                        table: "groceries", version: 42, originClient: "laptop-7f3a", originRef: "w3.17",
                        batch: Batch(reloadRows: [
                            .init(at: RowPath(section: 0, row: 5), value: ["item": "milk", "qty": 2])
                        ])))
            ),
            (
                "\(rowCount)-entry update",
                .update(
                    .init(
                        table: "groceries", version: 42, originClient: "laptop-7f3a", originRef: "w3.17",
                        batch: Batch(
                            deleteRows: (0..<rowCount / 2).map { RowPath(section: 0, row: $0 * 2) },
                            insertRows: (0..<rowCount / 2).map {
                                .init(
                                    at: RowPath(section: 1, row: $0),
                                    row: Row(
                                        id: "r\(1000 + $0)",
                                        value: ["item": .string("item \($0)"), "qty": .number(Double($0))]))
                            })))
            ),
        ]
        let encoder = JSONEncoder()
        for (name, message) in encodes {
            let mirror = WireServerMessage(message)
            let ours = message.encoded
            let theirs = try encoder.encode(mirror)
            guard try JSONValue(parsing: ours) == JSONValue(parsing: Array(theirs)) else {
                fatalError(
                    "\(name): the two encoders disagree:\n\(String(decoding: ours, as: UTF8.self))\n\(String(decoding: theirs, as: UTF8.self))"
                )
            }
            compare(
                "encode \(name) (\(ours.count) bytes)", ours: { _ = message.encoded },
                foundation: { _ = try encoder.encode(mirror) })
        }

        // The bare parsers, to a tree of values: JSONValue against JSONSerialization.
        let batch = Array(batchIntent(entries: 20).utf8)
        let batchData = Data(batch)
        compare(
            "parse the 20-entry batch to a tree (JSONValue vs JSONSerialization)",
            ours: { _ = try JSONValue(parsing: batch) },
            foundation: { _ = try JSONSerialization.jsonObject(with: batchData) })
    }

    /// A batch intent of `entries` row entries (deletes, inserts, edits and moves in turn).
    static func batchIntent(entries: Int) -> String {
        var deletes: [String] = []
        var inserts: [String] = []
        var reloads: [String] = []
        var moves: [String] = []
        for entry in 0..<entries {
            switch entry % 4 {
            case 0: deletes.append(#"{"at":[0,\#(entry)],"row":"r\#(entry)"}"#)
            case 1: inserts.append(#"{"at":[1,\#(entry)],"value":{"item":"item \#(entry)","qty":\#(entry)}}"#)
            case 2: reloads.append(#"{"at":[0,\#(entry)],"row":"r\#(entry)","value":"edited \#(entry)"}"#)
            default: moves.append(#"{"from":[0,\#(entry)],"row":"r\#(entry)","to":[2,0]}"#)
            }
        }
        func list(_ entries: [String]) -> String { "[" + entries.joined(separator: ",") + "]" }
        return #"{"type":"batch","table":"groceries","base":41,"ref":"w3.19","deleteRows":\#(list(deletes)),"#
            + #""insertRows":\#(list(inserts)),"reloadRows":\#(list(reloads)),"moveRows":\#(list(moves))}"#
    }

    /// Times both, `count` messages a round, and prints the median per message and the ratio.
    static func compare(_ name: String, count: Int = 2_000, ours: () throws -> Void, foundation: () throws -> Void) {
        func perMessage(_ body: () throws -> Void) -> Double {
            let clock = ContinuousClock()
            var samples: [Double] = []
            for _ in 0..<15 {
                let elapsed = clock.measure {
                    for _ in 0..<count { try? body() }
                }
                samples.append(elapsed / .microseconds(1) / Double(count))
            }
            return samples.sorted()[samples.count / 2]
        }
        let mine = perMessage(ours)
        let theirs = perMessage(foundation)
        print(
            String(
                format: "%@: ours %.2f µs, Foundation %.2f µs per message (Foundation takes %.1f× as long)", name, mine,
                theirs,
                theirs / mine))
    }
}

// MARK: - Codable mirrors of the wire shapes, for Foundation

/// Any JSON value, as a Codable type (what a Foundation user writes for the free-form `value` of a row).
enum AnyJSON: Codable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([AnyJSON])
    case object([String: AnyJSON])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([AnyJSON].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: AnyJSON].self))
        }
    }

    init(_ value: JSONValue) {
        switch value {
        case .null: self = .null
        case .bool(let value): self = .bool(value)
        case .number(let value): self = .number(value)
        case .string(let value): self = .string(value)
        case .array(let values): self = .array(values.map(AnyJSON.init))
        case .object(let members): self = .object(members.mapValues(AnyJSON.init))
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let values): try container.encode(values)
        case .object(let members): try container.encode(members)
        }
    }
}

/// A client intent: the fields of every row intent and the four row lists of a batch.
struct WireIntent: Decodable {
    struct Entry: Decodable {
        var at: [Int]?
        var from: [Int]?
        var to: [Int]?
        var row: String?
        var value: AnyJSON?
        var editable: Bool?
        var movable: Bool?
    }

    var type: String
    var table: String
    var base: UInt64?
    var ref: String?
    var at: [Int]?
    var from: [Int]?
    var to: [Int]?
    var row: String?
    var value: AnyJSON?
    var editable: Bool?
    var movable: Bool?
    var deleteRows: [Entry]?
    var insertRows: [Entry]?
    var reloadRows: [Entry]?
    var moveRows: [Entry]?
}

/// An `update` or `ack` as the server sends it.
enum WireServerMessage: Encodable {
    struct Origin: Encodable {
        var client: String
        var ref: String?
    }

    struct RowJSON: Encodable {
        var id: String
        var value: AnyJSON
        var editable: Bool?
        var movable: Bool?

        init(_ row: Row) {
            id = row.id
            value = AnyJSON(row.value)
            editable = row.editable ? nil : false
            movable = row.movable ? nil : false
        }
    }

    struct Insert: Encodable {
        var at: [Int]
        var row: RowJSON
    }

    struct Reload: Encodable {
        var at: [Int]
        var value: AnyJSON
        var editable: Bool?
        var movable: Bool?
    }

    struct Move: Encodable {
        var from: [Int]
        var to: [Int]
    }

    struct Update: Encodable {
        var type = "update"
        var table: String
        var version: UInt64
        var origin: Origin
        var deleteSections: [Int] = []
        var insertSections: [AnyJSON] = []
        var reloadSections: [AnyJSON] = []
        var moveSections: [AnyJSON] = []
        var deleteRows: [[Int]]
        var insertRows: [Insert]
        var reloadRows: [Reload]
        var moveRows: [Move]
    }

    struct Ack: Encodable {
        var type = "ack"
        var ref: String?
        var table: String
        var version: UInt64
        var created: [String]?
        var resolved: [AnyJSON]?
        var noop: Bool?
    }

    case update(Update)
    case ack(Ack)

    init(_ message: ServerMessage) {
        func path(_ path: RowPath) -> [Int] { [path.section, path.row] }
        switch message {
        case .update(let update):
            let batch = update.batch
            precondition(batch.insertSections.isEmpty && batch.reloadSections.isEmpty && batch.moveSections.isEmpty)
            self = .update(
                Update(
                    table: update.table, version: update.version,
                    origin: Origin(client: update.originClient, ref: update.originRef),
                    deleteSections: batch.deleteSections, deleteRows: batch.deleteRows.map(path),
                    insertRows: batch.insertRows.map { Insert(at: path($0.at), row: RowJSON($0.row)) },
                    reloadRows: batch.reloadRows.map {
                        Reload(at: path($0.at), value: AnyJSON($0.value), editable: $0.editable, movable: $0.movable)
                    },
                    moveRows: batch.moveRows.map { Move(from: path($0.from), to: path($0.to)) }))
        case .ack(let ack):
            self = .ack(
                Ack(
                    ref: ack.ref, table: ack.table, version: ack.version,
                    created: ack.created.isEmpty ? nil : ack.created,
                    resolved: ack.resolved.isEmpty ? nil : ack.resolved.map(AnyJSON.init), noop: ack.noop ? true : nil))
        default:
            fatalError("only updates and acks are mirrored")
        }
    }

    func encode(to encoder: any Encoder) throws {
        switch self {
        case .update(let update): try update.encode(to: encoder)
        case .ack(let ack): try ack.encode(to: encoder)
        }
    }
}
