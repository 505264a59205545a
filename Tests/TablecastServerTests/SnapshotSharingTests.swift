import MemoryBudget
import TableModel
import WebSocketTransport
import XCTest

@testable import TablecastServer

/// The snapshot a table shares with its catch-ups, stepped by hand: one build for many waiters, the updates after
/// a shared snapshot, and when a newer one is needed.
final class SnapshotSharingTests: XCTestCase {
    private let limit = ServerContext.CatchUpLimit(messages: 3, bytes: 100)

    private func waiter(_ connection: UInt64, subscribing: Bool = true) -> SnapshotSharing.Waiter {
        .init(
            requester: Requester(
                connection: WebSocketConnectionID(rawValue: connection), client: "c\(connection)", name: nil,
                user: nil, stable: false,
                principal: ""),
            ref: "r\(connection)", subscribing: subscribing)
    }

    private func snapshot(_ version: UInt64, rules: TableRules = TableRules()) -> SnapshotSharing.Snapshot {
        .init(version: version, rules: rules, message: WebSocketMessage(text: "snapshot \(version)"))
    }

    private func history(after version: UInt64, updates: Int, bytes: Int = 10) -> UpdateHistory {
        let history = UpdateHistory(
            after: version, limit: 100, byteLimit: 1 << 20, account: MemoryBudget.unlimited[.updateHistory])
        for _ in 0..<updates { history.append(WebSocketMessage(text: String(repeating: "u", count: bytes))) }
        return history
    }

    func testManyWaitersShareOneBuild() {
        var sharing = SnapshotSharing()
        XCTAssertTrue(sharing.wait(waiter(1)), "the first waiter starts a build")
        XCTAssertFalse(sharing.wait(waiter(2)), "the others wait for it")
        XCTAssertFalse(sharing.wait(waiter(3, subscribing: false)))
        sharing.cancelSubscribe(of: WebSocketConnectionID(rawValue: 2))
        let served = sharing.built(snapshot(5))
        XCTAssertEqual(served.map(\.requester.connection.rawValue), [1, 3])
        XCTAssertFalse(sharing.isBuilding)
        XCTAssertFalse(sharing.startBuilding(), "nobody waits")
        XCTAssertEqual(sharing.shared?.version, 5)
    }

    func testACatchUpIsTheSharedSnapshotAndTheUpdatesAfterItWhileTheyFit() throws {
        var sharing = SnapshotSharing()
        XCTAssertNil(
            sharing.catchUp(version: 5, rules: TableRules(), history: history(after: 5, updates: 0), limit: limit))
        _ = sharing.wait(waiter(1))
        _ = sharing.built(snapshot(5))
        let same = try XCTUnwrap(
            sharing.catchUp(version: 5, rules: TableRules(), history: history(after: 5, updates: 0), limit: limit))
        XCTAssertEqual(same.count, 1)
        let later = try XCTUnwrap(
            sharing.catchUp(version: 8, rules: TableRules(), history: history(after: 5, updates: 3), limit: limit))
        XCTAssertEqual(later.map(\.count), [10, 10, 10, 10])
        XCTAssertNil(
            sharing.catchUp(version: 9, rules: TableRules(), history: history(after: 5, updates: 4), limit: limit),
            "more updates than the bound: a newer snapshot")
        XCTAssertNil(
            sharing.catchUp(
                version: 8, rules: TableRules(), history: history(after: 5, updates: 3, bytes: 40), limit: limit),
            "more bytes than the bound")
        XCTAssertNil(
            sharing.catchUp(version: 8, rules: TableRules(), history: history(after: 6, updates: 2), limit: limit),
            "updates no longer kept")
        XCTAssertNil(
            sharing.catchUp(
                version: 5, rules: TableRules(maxSections: 3), history: history(after: 5, updates: 0), limit: limit),
            "the rules changed since")
    }

    func testAWaiterTheBuiltSnapshotCannotServeWaitsForTheNextBuild() {
        var sharing = SnapshotSharing()
        _ = sharing.wait(waiter(1))
        for waiter in sharing.built(snapshot(5)) { sharing.requeue(waiter) }
        XCTAssertTrue(sharing.startBuilding(), "a newer snapshot is built for it")
        XCTAssertFalse(sharing.startBuilding(), "one at a time")
        XCTAssertTrue(sharing.retryBuilding(), "a postponed build is tried again")
    }

    func testTheSharedSnapshotExpiresUnlessReplacedAndIsForgottenWithTheState() {
        var sharing = SnapshotSharing()
        sharing.share(snapshot(5))
        sharing.share(snapshot(7))
        sharing.expire(version: 5)
        XCTAssertEqual(sharing.shared?.version, 7, "a newer one replaced it")
        sharing.expire(version: 7)
        XCTAssertNil(sharing.shared)
        sharing.share(snapshot(9))
        sharing.forget()
        XCTAssertNil(sharing.shared)
    }
}
