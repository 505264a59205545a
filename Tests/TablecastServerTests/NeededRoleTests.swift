import TableModel
import TablecastProtocol
import XCTest

@testable import TablecastServer

/// Setting a row's `editable`, `movable` or `editingStyle` needs the admin role; row intents are answered without
/// building their batch, and must answer as their batch does.
final class NeededRoleTests: XCTestCase {
    private let path = RowPath(section: 0, row: 1)

    private func role(_ intent: Intent) -> Role {
        ClientMessage(.intent(table: "t", base: nil, intent)).neededRole
    }

    func testRowIntentsNeedAdminOnlyToSetFlags() {
        let cases: [(Intent, Role)] = [
            (.insert(at: path, row: RowContent(value: "a")), .write),
            (.insert(at: path, row: RowContent(value: "a", editable: false)), .admin),
            (.insert(at: path, row: RowContent(value: "a", movable: false)), .admin),
            (.insert(at: path, row: RowContent(value: "a", editingStyle: .insert)), .admin),
            (.delete(RowRef(path)), .write),
            (.move(from: RowRef(path), to: path), .write),
            (.edit(RowRef(path), value: "b"), .write),
            (.edit(RowRef(path), value: "b", editable: true), .admin),
            (.edit(RowRef(path), value: "b", movable: false), .admin),
            (.edit(RowRef(path), value: "b", editingStyle: EditingStyle.none), .admin),
            (.patch(RowRef(path), patch: ["n": 1]), .write),
            (.deleteSection(SectionRef(0)), .write),
            (.moveSection(from: SectionRef(0), to: 1), .write),
            (.editSection(SectionRef(0), header: "h"), .write),
            (.editSection(SectionRef(0), rows: [RowContent(value: "c", movable: false)]), .admin),
            (.insertSection(at: 0, section: SectionContent(rows: [RowContent(value: "c")])), .write),
            (.insertSection(at: 0, section: SectionContent(rows: [RowContent(value: "c", editable: false)])), .admin),
        ]
        for (intent, expected) in cases {
            XCTAssertEqual(role(intent), expected, "\(intent)")
            // The same change as a batch goes through the batch's lists.
            XCTAssertEqual(role(.batch(intent.clientBatch)), expected, "\(intent) as a batch")
        }
    }
}
