import MemoryBudget
import TableModel
import TablecastProtocol
import WebSocketTransport
import XCTest

@testable import TablecastServer

/// `history` from memory answers only pages it holds entirely, pages like the store and never offers a `next`
/// it cannot show.
final class RecentChangesTests: XCTestCase {
    private func update(_ version: UInt64) -> WebSocketMessage {
        let update = ServerMessage.Update(
            table: "t", version: version, originClient: "ana", originRef: "r\(version)",
            batch: Batch(deleteRows: [RowPath(section: 0, row: 0)]))
        return WebSocketMessage(kind: .text, bytes: update.encoded)
    }

    private func changes(
        _ recent: RecentChanges, from: UInt64? = nil, to: UInt64? = nil, limit: Int, newestFirst: Bool = true
    )
        -> ServerMessage.Changes?
    {
        recent.changes("t", epoch: 9, from: from, to: to, limit: limit, newestFirst: newestFirst, ref: "q")
    }

    func testPagesWhatItHoldsAndNothingElse() {
        let recent = RecentChanges(account: MemoryBudget.unlimited[.updateHistory], limit: 5)
        for version in UInt64(1)...8 {
            recent.append(
                "t", epoch: 9, version: version, time: Int64(version), originName: "Ana", originUser: "ana",
                update: update(version))
        }
        // Versions 4...8 are held.
        let page = changes(recent, limit: 3)
        XCTAssertEqual(page?.entries.map(\.version), [8, 7, 6])
        XCTAssertEqual(page.map { [$0.version, $0.oldest, $0.next ?? 0] }, [8, 3, 5])
        XCTAssertEqual(page?.entries.first?.originName, "Ana")
        XCTAssertEqual(page?.entries.first?.originUser, "ana")
        XCTAssertEqual(page?.entries.first?.originRef, "r8")
        XCTAssertEqual(page?.entries.first?.time, 8)
        XCTAssertEqual(changes(recent, to: 5, limit: 3)?.entries.map(\.version), nil, "3 and 2 are not held")
        XCTAssertEqual(changes(recent, to: 5, limit: 2)?.entries.map(\.version), [5, 4])
        XCTAssertNil(changes(recent, to: 5, limit: 2)?.next, "4 is the oldest held")
        XCTAssertEqual(
            changes(recent, from: 4, limit: 2, newestFirst: false).map { $0.entries.map(\.version) }, [4, 5])
        XCTAssertEqual(changes(recent, from: 4, limit: 2, newestFirst: false)?.next, 6)
        XCTAssertNil(changes(recent, from: 2, limit: 2, newestFirst: false))
        XCTAssertNil(
            recent.changes("t", epoch: 10, from: nil, to: nil, limit: 1, newestFirst: true, ref: nil), "another life")
    }

    func testAGapOrAnotherLifeStartsOver() {
        let recent = RecentChanges(account: MemoryBudget.unlimited[.updateHistory])
        for version in UInt64(1)...3 {
            recent.append(
                "t", epoch: 9, version: version, time: 0, originName: "", originUser: "", update: update(version))
        }
        XCTAssertEqual(
            changes(recent, limit: 10)?.entries.map(\.version), [3, 2, 1], "from the first version: all of it")
        recent.append("t", epoch: 9, version: 7, time: 0, originName: "", originUser: "", update: update(7))
        XCTAssertNil(changes(recent, limit: 10))
        XCTAssertEqual(changes(recent, limit: 1)?.entries.map(\.version), [7])
        XCTAssertNil(changes(recent, limit: 1)?.entries.first?.originName, "no name kept: none shown")
    }

    func testItsBytesCountInTheBudgetAndGiveWayWhenItsShareIsFull() {
        let size = update(1).count
        let account = MemoryBudget(limit: size * 4 * 4)[.updateHistory] // a share of 4 updates
        var recent: RecentChanges? = RecentChanges(account: account)
        for version in UInt64(1)...3 {
            recent!.append(
                "t", epoch: 9, version: version, time: 0, originName: "", originUser: "", update: update(version))
        }
        XCTAssertEqual(account.bytes, 3 * size)
        for version in UInt64(4)...9 {
            recent!.append(
                "t", epoch: 9, version: version, time: 0, originName: "", originUser: "", update: update(version))
        }
        XCTAssertLessThanOrEqual(account.bytes, account.share)
        XCTAssertEqual(changes(recent!, limit: 10), nil, "the oldest were given back")
        XCTAssertEqual(changes(recent!, limit: 4)?.entries.map(\.version), [9, 8, 7, 6])
        recent!.append("u", epoch: 1, version: 1, time: 0, originName: "", originUser: "", update: update(1))
        recent!.forget("u")
        XCTAssertEqual(account.bytes, 4 * size)
        recent = nil
        XCTAssertEqual(account.bytes, 0)
    }
}
