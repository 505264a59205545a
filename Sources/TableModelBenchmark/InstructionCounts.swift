// `table-model-bench count PATH N` runs one hot path N times and prints nothing timed: it is the workload that
// scripts/instruction-counts.py runs under valgrind's callgrind twice (N and 2N) to get the instructions of one
// operation from the difference, a figure that does not depend on what else the machine is doing.

import TableModel
import TablecastProtocol

enum InstructionCounts {
    /// The hot paths, by name.
    static let paths: [String: @Sendable (Int) throws -> Void] = [
        "decode-edit": decodeEdit, "resolve-edit": resolveEdit, "encode-update": encodeUpdate,
        "encode-update-100": encodeLargeUpdate,
    ]

    static func run(_ arguments: [String]) throws {
        guard arguments.count == 2, let body = paths[arguments[0]], let count = Int(arguments[1]), count > 0 else {
            print("usage: table-model-bench count (\(paths.keys.sorted().joined(separator: "|"))) ITERATIONS")
            return
        }
        try body(count)
    }

    /// The 114-byte `edit` intent of the JSON benchmark, decoded from bytes to a message.
    static func decodeEdit(_ count: Int) throws {
        let bytes = Array(
            #"{"type":"edit","table":"groceries","base":41,"ref":"w3.17","at":[0,5],"row":"r42","value":{"item":"milk","qty":2}}"#
                .utf8)
        var versions: UInt64 = 0
        for _ in 0..<count {
            guard case .intent(_, let base, _) = try ClientMessage.decode(bytes).body else { fatalError("not an edit") }
            versions &+= base ?? 0
        }
        precondition(versions == 41 &* UInt64(count))
    }

    /// The server's engine on one edit whose base is 16 versions behind (rebased over single-row edits), then
    /// committed, in a table of 10 sections of 100 rows.
    static func resolveEdit(_ count: Int) throws {
        var engine = TableEngine(
            table: Table(
                contents: (0..<10).map { section in
                    SectionContent(rows: (0..<100).map { RowContent(value: .number(Double(section * 100 + $0))) })
                }))
        for step in 0..<16 {
            try engine.commit(engine.resolve(.edit(RowRef(RowPath(section: step % 10, row: step)), value: "warm")))
        }
        for step in 0..<count {
            let target = RowPath(section: step % 10, row: (step * 7) % 100)
            let id = engine.table.sections[target.section].rows[target.row].id
            try engine.commit(
                engine.resolve(
                    .edit(RowRef(target, id: id), value: .number(Double(step))), base: engine.table.version - 16))
        }
    }

    /// The `update` of a committed single-row edit, encoded to its JSON bytes.
    static func encodeUpdate(_ count: Int) throws {
        var bytes = 0
        for step in 0..<count {
            let update = ServerMessage.update(
                .init(
                    table: "groceries", version: UInt64(42 + step), originClient: "laptop-7f3a", originRef: "w3.17",
                    batch: Batch(reloadRows: [
                        .init(at: RowPath(section: 0, row: 5), value: ["item": "milk", "qty": 2])
                    ])))
            bytes &+= update.encoded.count
        }
        precondition(bytes > count)
    }

    /// The JSON benchmark's 100-entry `update` (50 rows deleted, 50 inserted with two-member values), encoded.
    static func encodeLargeUpdate(_ count: Int) throws {
        let update = ServerMessage.update(
            .init(
                table: "groceries", version: 42, originClient: "laptop-7f3a", originRef: "w3.17",
                batch: Batch(
                    deleteRows: (0..<50).map { RowPath(section: 0, row: $0 * 2) },
                    insertRows: (0..<50).map {
                        .init(
                            at: RowPath(section: 1, row: $0),
                            row: Row(
                                id: "r\(1000 + $0)",
                                value: ["item": .string("item \($0)"), "qty": .number(Double($0))]))
                    })))
        var bytes = 0
        for _ in 0..<count { bytes &+= update.encoded.count }
        precondition(bytes > count)
    }
}
