import TableModel
import TablecastProtocol
import TablecastServer
import XCTest

final class PresenceBoardTests: XCTestCase {
    typealias Entry = PresenceEntry

    private func entry(_ key: String, _ client: String, _ name: String, editing: Bool = false, row: String? = nil)
        -> Entry
    {
        Entry(key: key, client: client, name: name, editing: editing, row: row)
    }

    /// Someone who keeps a copy of the published state by applying every delta, as a subscriber does.
    private struct Subscriber {
        var state = PresenceState(you: "")

        mutating func receive(_ delta: PresenceDelta?) {
            delta?.apply(to: &state)
        }
    }

    func testJoinsArePublishedAsOneDeltaInArrivalOrderAndDuplicatesChangeNothing() {
        var board = PresenceBoard<Int>()
        XCTAssertTrue(board.join(2, key: "c2", client: "b", name: "Bo"))
        XCTAssertTrue(board.join(1, key: "c1", client: "a", name: "Ana"))
        XCTAssertFalse(board.join(2, key: "c2", client: "b", name: "Bo"))
        XCTAssertEqual(board.publishedClients, [], "nothing is published before the delta")
        XCTAssertEqual(
            board.takeDelta(table: "t"),
            PresenceDelta(table: "t", joined: [entry("c2", "b", "Bo"), entry("c1", "a", "Ana")], viewers: 0))
        XCTAssertEqual(board.publishedClients.map(\.key), ["c2", "c1"])
        XCTAssertFalse(board.hasNews)
        XCTAssertNil(board.takeDelta(table: "t"))
    }

    func testViewersElsewhereCountAndAChangeOfOwnViewersIsNewsEvenWhenTheTotalStays() {
        var board = PresenceBoard<Int>()
        _ = board.join(1, key: "c1", client: "anon-1", name: nil)
        board.setViewersElsewhere(2)
        XCTAssertEqual(board.takeDelta(table: "t"), PresenceDelta(table: "t", viewers: 3))
        XCTAssertEqual(board.ownViewerCount, 1)
        // One viewer leaves here as one arrives elsewhere: subscribers see no change, the other nodes must.
        _ = board.leave(1)
        board.setViewersElsewhere(3)
        XCTAssertTrue(board.hasNews)
        XCTAssertNil(board.takeDelta(table: "t"))
        XCTAssertEqual(board.ownViewerCount, 0)
        XCTAssertFalse(board.hasNews)
        XCTAssertEqual(board.publishedViewerCount, 3)
    }

    func testConnectionsWithoutANameOnlyCountUntilTheySendPresence() {
        var board = PresenceBoard<Int>()
        _ = board.join(1, key: "c1", client: "a", name: "Ana")
        _ = board.join(2, key: "c2", client: "anon-2", name: nil)
        _ = board.join(3, key: "c3", client: "anon-3", name: nil)
        XCTAssertEqual(
            board.takeDelta(table: "t"), PresenceDelta(table: "t", joined: [entry("c1", "a", "Ana")], viewers: 2))
        XCTAssertTrue(board.setEditing(3, false), "sending presence lists a viewer, even when it changes nothing else")
        XCTAssertEqual(
            board.takeDelta(table: "t"),
            PresenceDelta(table: "t", joined: [entry("c3", "anon-3", "anon-3")], viewers: 1))
        XCTAssertTrue(board.leave(2))
        XCTAssertEqual(board.takeDelta(table: "t"), PresenceDelta(table: "t", viewers: 0))
    }

    func testARenameShowsTheNewNameAndUserAndListsAViewerOnlyWhenItGetsAName() {
        var board = PresenceBoard<Int>()
        _ = board.join(1, key: "c1", client: "a", name: "Ana", user: "ana")
        _ = board.join(2, key: "c2", client: "anon-2", name: nil)
        _ = board.takeDelta(table: "t")
        XCTAssertFalse(board.rename(1, name: "Ana", user: "ana"), "the same name and user are no news")
        XCTAssertFalse(board.hasNews)
        XCTAssertTrue(board.rename(1, name: "Ana Lopez", user: "ana"))
        var renamed = PresenceEntry(key: "c1", client: "a", name: "Ana Lopez", editing: false, row: nil, user: "ana")
        XCTAssertEqual(board.takeDelta(table: "t"), PresenceDelta(table: "t", changed: [renamed], viewers: 1))
        XCTAssertTrue(board.rename(1, name: nil, user: "ana"), "without a name, its client id shows")
        renamed.name = "a"
        XCTAssertEqual(board.takeDelta(table: "t"), PresenceDelta(table: "t", changed: [renamed], viewers: 1))
        XCTAssertFalse(board.rename(2, name: nil, user: "bo"), "a viewer given no name stays a viewer")
        XCTAssertFalse(board.hasNews)
        XCTAssertTrue(board.rename(2, name: "Bo", user: "bo"))
        XCTAssertEqual(
            board.takeDelta(table: "t"),
            PresenceDelta(
                table: "t",
                joined: [PresenceEntry(key: "c2", client: "anon-2", name: "Bo", editing: false, row: nil, user: "bo")],
                viewers: 0))
        XCTAssertFalse(board.rename(3, name: "Cy", user: nil), "not on the board")
    }

    func testEditingModeAndRowEditingAreChangesOnlyWhenTheyChange() {
        var board = PresenceBoard<Int>()
        _ = board.join(1, key: "c1", client: "a", name: "Ana")
        _ = board.takeDelta(table: "t")
        XCTAssertTrue(board.setEditing(1, true))
        XCTAssertFalse(board.setEditing(1, true))
        XCTAssertTrue(board.beginEditingRow(1, row: "r3"))
        XCTAssertTrue(board.beginEditingRow(1, row: "r4"), "a new row replaces the old one")
        XCTAssertFalse(board.endEditingRow(1, row: "r3"), "ending a row not being edited changes nothing")
        XCTAssertEqual(
            board.takeDelta(table: "t"),
            PresenceDelta(table: "t", changed: [entry("c1", "a", "Ana", editing: true, row: "r4")], viewers: 0))
        XCTAssertTrue(board.endEditingRow(1, row: "r4"))
        XCTAssertTrue(board.beginEditingRow(1, row: "r4"))
        XCTAssertNil(board.takeDelta(table: "t"), "a change undone before the delta is no news")
    }

    func testADeletedRowIsClearedForEveryoneEditingIt() {
        var board = PresenceBoard<Int>()
        _ = board.join(1, key: "c1", client: "a", name: "Ana")
        _ = board.join(2, key: "c2", client: "b", name: "Bo")
        _ = board.beginEditingRow(1, row: "r7")
        _ = board.beginEditingRow(2, row: "r7")
        _ = board.takeDelta(table: "t")
        XCTAssertTrue(board.isEdited("r7"))
        XCTAssertTrue(board.clearRow("r7"))
        XCTAssertFalse(board.isEdited("r7"))
        XCTAssertFalse(board.anyRowEdited)
        XCTAssertFalse(board.clearRow("r7"))
        XCTAssertEqual(
            board.takeDelta(table: "t"),
            PresenceDelta(table: "t", changed: [entry("c1", "a", "Ana"), entry("c2", "b", "Bo")], viewers: 0))
    }

    func testLeavingIsAKeyAndAJoinAndLeaveBetweenDeltasIsNothing() {
        var board = PresenceBoard<Int>()
        _ = board.join(1, key: "c1", client: "a", name: "Ana")
        _ = board.join(2, key: "c2", client: "a", name: "Ana (tab 2)")
        _ = board.beginEditingRow(1, row: "r1")
        _ = board.takeDelta(table: "t")
        XCTAssertTrue(board.leave(1))
        XCTAssertFalse(board.leave(1))
        XCTAssertFalse(board.setEditing(9, true))
        XCTAssertFalse(board.contains(1))
        XCTAssertFalse(board.isEdited("r1"), "a connection's row goes with it")
        _ = board.join(3, key: "c3", client: "c", name: "Cy")
        XCTAssertTrue(board.leave(3))
        XCTAssertEqual(board.takeDelta(table: "t"), PresenceDelta(table: "t", left: ["c1"], viewers: 0))
        XCTAssertEqual(board.publishedClients, [entry("c2", "a", "Ana (tab 2)")])
    }

    /// Whatever happens, a subscriber that took the published state at any moment and applied every delta after it
    /// has the state the board publishes.
    func testDeltasApplyToThePublishedStateWhereverASubscriberJoined() throws {
        var generator = SystemRandomNumberGenerator()
        var board = PresenceBoard<Int>()
        var subscribers: [Subscriber] = []
        for step in 0..<2_000 {
            let connection = Int.random(in: 0..<20, using: &generator)
            switch Int.random(in: 0..<6, using: &generator) {
            case 0:
                _ = board.join(
                    connection, key: "c\(connection)", client: "x", name: Bool.random() ? "N\(connection)" : nil)
            case 1: _ = board.leave(connection)
            case 2: _ = board.setEditing(connection, Bool.random())
            case 3: _ = board.beginEditingRow(connection, row: "r\(Int.random(in: 0..<4))")
            case 4: _ = board.endEditingRow(connection, row: "r\(Int.random(in: 0..<4))")
            default: _ = board.clearRow("r\(Int.random(in: 0..<4))")
            }
            if step % 3 == 0 {
                let delta = board.takeDelta(table: "t")
                for index in subscribers.indices { subscribers[index].receive(delta) }
                if step % 30 == 0 {
                    let state = try JSONValue(parsing: board.publishedStateJSON())
                    XCTAssertEqual(
                        state,
                        PresenceState(you: "", clients: board.publishedClients, viewers: board.publishedViewerCount)
                            .json.removing("you"))
                    subscribers.append(
                        Subscriber(
                            state: PresenceState(
                                you: "", clients: board.publishedClients, viewers: board.publishedViewerCount)))
                }
            }
        }
        let last = board.takeDelta(table: "t")
        for index in subscribers.indices { subscribers[index].receive(last) }
        for subscriber in subscribers {
            XCTAssertEqual(subscriber.state.clients, board.publishedClients)
            XCTAssertEqual(subscriber.state.viewers, board.publishedViewerCount)
        }
    }
}

extension JSONValue {
    fileprivate func removing(_ key: String) -> JSONValue {
        guard case .object(var members) = self else { return self }
        members[key] = nil
        return .object(members)
    }
}
