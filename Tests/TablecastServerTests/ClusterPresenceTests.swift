import Logging
import TableStore
import TablecastProtocol
import TablecastTesting
import XCTest

@testable import TablecastServer

/// What one node shares of its presence on a table, as the other nodes read it back.
final class ClusterPresenceTests: XCTestCase {
    func testASharedPresenceKeepsItsClientsWithNodePrefixedKeysAndItsViewers() {
        let share = ClusterPresence.Share(
            clients: [
                PresenceEntry(key: "c1", client: "ana", name: "Ana", editing: true, row: "r2", user: "ana"),
                PresenceEntry(key: "c2", client: "bo", name: "Bo", editing: false, row: nil),
            ], viewers: 4)
        let read = ClusterPresence.decode(ClusterPresence.encode(share, node: "0123456789").jsonText)
        XCTAssertEqual(read.viewers, 4)
        XCTAssertEqual(
            read.clients,
            [
                PresenceEntry(key: "01234567-c1", client: "ana", name: "Ana", editing: true, row: "r2", user: "ana"),
                PresenceEntry(key: "01234567-c2", client: "bo", name: "Bo", editing: false, row: nil),
            ])
    }

    func testABareListFromAnOlderNodeCountsNoViewers() {
        let read = ClusterPresence.decode(#"[{"key":"n-c1","client":"bo","name":"Bo","editing":false}]"#)
        XCTAssertEqual(
            read,
            ClusterPresence.Share(clients: [
                PresenceEntry(key: "n-c1", client: "bo", name: "Bo", editing: false, row: nil)
            ]))
        XCTAssertEqual(ClusterPresence.decode("not json"), ClusterPresence.Share())
    }

    func testTheOtherNodesPresenceIsShownOnTheBoardAndFollowedAsItChanges() {
        var board = PresenceBoard<String>()
        board.join("local", key: "c1", client: "ana", name: "Ana")
        _ = board.takeDelta(table: "t")
        var others = OtherNodesPresence()
        let bo = PresenceEntry(key: "n2-c4", client: "bo", name: "Bo", editing: true, row: "r7")
        others.show(ClusterPresence.Share(clients: [bo], viewers: 2), on: &board, as: { "remote \($0)" })
        XCTAssertEqual(board.takeDelta(table: "t"), PresenceDelta(table: "t", joined: [bo], viewers: 2))
        // Bo stops editing the row: the board ends it; the same share again changes nothing.
        var done = bo
        done.row = nil
        others.show(ClusterPresence.Share(clients: [done], viewers: 2), on: &board, as: { "remote \($0)" })
        XCTAssertEqual(board.takeDelta(table: "t"), PresenceDelta(table: "t", changed: [done], viewers: 2))
        others.show(ClusterPresence.Share(clients: [done], viewers: 2), on: &board, as: { "remote \($0)" })
        XCTAssertNil(board.takeDelta(table: "t"))
        // The other node empties: Bo leaves and its viewers no longer count.
        others.show(ClusterPresence.Share(), on: &board, as: { "remote \($0)" })
        XCTAssertEqual(board.takeDelta(table: "t"), PresenceDelta(table: "t", left: ["n2-c4"], viewers: 0))
        XCTAssertEqual(board.publishedClients.map(\.key), ["c1"])
    }

    func testTheOtherNodesCountsAreReadOncePerLifetimeHoweverManyAsk() async throws {
        let url = try PostgresCluster.shared().createDatabase(prefix: "presence")
        _ = try PostgresTableStore(url: url) // creates the schema
        let here = ClusterPresence(
            url: url, logger: Logger(label: "here"), tasks: ServerTasks(), countsLifetime: .seconds(2))
        let there = ClusterPresence(url: url, logger: Logger(label: "there"), tasks: ServerTasks())
        defer {
            here.stop()
            there.stop()
        }
        let stored = PostgresPresence(url: url)
        func storedViewers() throws -> Int? {
            try stored.others(on: "t", excluding: here.node).map { ClusterPresence.decode($0).viewers }.first
        }
        there.publish(table: "t", ClusterPresence.Share(viewers: 1))
        let deadline = ContinuousClock.now + .seconds(10)
        while try storedViewers() != 1 {
            XCTAssertLessThan(ContinuousClock.now, deadline)
            try await Task.sleep(for: .milliseconds(20))
        }
        let first = await here.subscribersElsewhere()
        XCTAssertEqual(first, ["t": 1])
        there.publish(table: "t", ClusterPresence.Share(viewers: 3))
        while try storedViewers() != 3 {
            XCTAssertLessThan(ContinuousClock.now, deadline)
            try await Task.sleep(for: .milliseconds(20))
        }
        // Within the lifetime of the first read, every asker gets it; after, the store is read again.
        let answers = await withTaskGroup(of: [String: Int].self) { group in
            for _ in 0..<50 { group.addTask { await here.subscribersElsewhere() } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        XCTAssertEqual(Set(answers), [["t": 1]])
        try await Task.sleep(for: .seconds(2))
        let later = await here.subscribersElsewhere()
        XCTAssertEqual(later, ["t": 3])
    }
}
