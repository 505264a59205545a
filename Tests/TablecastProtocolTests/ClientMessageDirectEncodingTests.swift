import TableModel
import TablecastTesting
import XCTest

@testable import TablecastProtocol

/// Row intents are written straight into bytes (`directlyEncoded()`); their text must be exactly what the general
/// encoder (`json.jsonBytes`) writes, since the server fingerprints intents by these bytes and stores the
/// fingerprints (a retry after an upgrade must still be told from a reused ref).
final class ClientMessageDirectEncodingTests: XCTestCase {
    private static let strings = ["", "a", "r17", "t\"q", "back\\slash", "line\nbreak", "\u{1}ctl", "é✓", "😀x"]

    private func string(_ g: inout SeededGenerator) -> String {
        Self.strings.randomElement(using: &g)!
            + (Bool.random(using: &g) ? String(Int.random(in: 0...999, using: &g)) : "")
    }

    private func value(_ depth: Int, _ g: inout SeededGenerator) -> JSONValue {
        switch Int.random(in: 0..<(depth > 2 ? 5 : 7), using: &g) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &g))
        case 2: return .number([-1, 0, 1.5, 2, 1e300, -0.25, 9_007_199_254_740_994].randomElement(using: &g)!)
        case 3: return .string(string(&g))
        case 4: return .number(Double(Int.random(in: -5...5_000, using: &g)))
        case 5: return .array((0..<Int.random(in: 0...3, using: &g)).map { _ in value(depth + 1, &g) })
        default:
            return .object(
                Dictionary(
                    (0..<Int.random(in: 0...4, using: &g)).map { _ in (string(&g), value(depth + 1, &g)) },
                    uniquingKeysWith: { a, _ in a }))
        }
    }

    private func path(_ g: inout SeededGenerator) -> RowPath {
        RowPath(section: Int.random(in: 0...12, using: &g), row: Int.random(in: 0...100_000, using: &g))
    }

    private func rowRef(_ g: inout SeededGenerator) -> RowRef {
        RowRef(path(&g), id: Bool.random(using: &g) ? string(&g) : nil)
    }

    private func intent(_ g: inout SeededGenerator) -> Intent {
        switch Int.random(in: 0..<5, using: &g) {
        case 0:
            return .insert(
                at: path(&g),
                row: RowContent(
                    value: value(0, &g), editable: Bool.random(using: &g), movable: Bool.random(using: &g),
                    editingStyle: EditingStyle.allCases.randomElement(using: &g)!))
        case 1: return .delete(rowRef(&g))
        case 2: return .move(from: rowRef(&g), to: path(&g))
        case 3:
            return .edit(
                rowRef(&g), value: value(0, &g), editable: [nil, true, false].randomElement(using: &g)!,
                movable: [nil, true, false].randomElement(using: &g)!,
                editingStyle: [nil, EditingStyle.delete, .insert, EditingStyle.none].randomElement(using: &g)!)
        default: return .patch(rowRef(&g), patch: value(0, &g))
        }
    }

    func testRowIntentsAreWrittenAsTheGeneralEncoderWritesThem() throws {
        let seed = UInt64.random(in: 0...UInt64.max)
        var g = SeededGenerator(seed: seed)
        for _ in 0..<20_000 {
            let ref = Bool.random(using: &g) ? string(&g) : nil
            let base = Bool.random(using: &g) ? UInt64.random(in: 0...1 << 53, using: &g) : nil
            let table = ["t", "groceries", "a.b_c-9"].randomElement(using: &g)!
            let message = ClientMessage(ref: ref, .intent(table: table, base: base, intent(&g)))
            let direct = try XCTUnwrap(message.directlyEncoded(), "seed \(seed)")
            XCTAssertEqual(
                String(decoding: direct, as: UTF8.self), String(decoding: message.json.jsonBytes, as: UTF8.self),
                "seed \(seed)")
            XCTAssertEqual(try ClientMessage.decode(direct), message, "seed \(seed)")
        }
    }

    func testOtherMessagesGoThroughTheGeneralEncoder() {
        let section = SectionRef(1, id: "s")
        let rows = ClientBatch(deleteRows: [RowRef(RowPath(section: 0, row: 1))])
        let messages: [ClientMessage] = [
            ClientMessage(ref: "d", .intent(table: "t", base: 3, .deleteSection(section))),
            ClientMessage(.intent(table: "t", base: nil, .moveSection(from: section, to: 0))),
            ClientMessage(.intent(table: "t", base: nil, .batch(rows))),
            ClientMessage(ref: "s", .subscribe(table: "t", since: 4, epoch: nil)),
        ]
        for message in messages {
            XCTAssertNil(message.directlyEncoded())
            XCTAssertEqual(message.encoded, message.json.jsonBytes)
        }
    }
}
