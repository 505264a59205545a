import TablecastProtocol
import TablecastServer
import XCTest

final class PresenceBoardTests: XCTestCase {
    typealias Entry = PresenceEntry

    func testJoinOrderIsKeptAndDuplicatesChangeNothing() {
        var board = PresenceBoard<Int>()
        XCTAssertTrue(board.join(2, client: "b", name: "Bo"))
        XCTAssertTrue(board.join(1, client: "a", name: "Ana"))
        XCTAssertFalse(board.join(2, client: "b", name: "Bo"))
        XCTAssertEqual(board.clients.map(\.client), ["b", "a"])
    }

    func testEditingModeAndRowEditingAreReportedOnlyWhenTheyChange() {
        var board = PresenceBoard<Int>()
        _ = board.join(1, client: "a", name: "Ana")
        XCTAssertTrue(board.setEditing(1, true))
        XCTAssertFalse(board.setEditing(1, true))
        XCTAssertTrue(board.beginEditingRow(1, row: "r3"))
        XCTAssertTrue(board.beginEditingRow(1, row: "r4"), "a new row replaces the old one")
        XCTAssertFalse(board.endEditingRow(1, row: "r3"), "ending a row not being edited changes nothing")
        XCTAssertEqual(board.clients, [Entry(client: "a", name: "Ana", editing: true, row: "r4")])
        XCTAssertTrue(board.endEditingRow(1, row: "r4"))
        XCTAssertEqual(board.clients, [Entry(client: "a", name: "Ana", editing: true, row: nil)])
    }

    func testLeavingClearsEverythingAndStrangersChangeNothing() {
        var board = PresenceBoard<Int>()
        _ = board.join(1, client: "a", name: "Ana")
        _ = board.join(2, client: "a", name: "Ana (tab 2)")
        _ = board.beginEditingRow(1, row: "r1")
        XCTAssertTrue(board.leave(1))
        XCTAssertFalse(board.leave(1))
        XCTAssertFalse(board.setEditing(9, true))
        XCTAssertFalse(board.contains(1))
        XCTAssertEqual(board.clients, [Entry(client: "a", name: "Ana (tab 2)", editing: false, row: nil)])
        XCTAssertTrue(board.leave(2))
        XCTAssertTrue(board.isEmpty)
    }
}
