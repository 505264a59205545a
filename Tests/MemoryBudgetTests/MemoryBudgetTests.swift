import MemoryBudget
import XCTest

final class MemoryBudgetTests: XCTestCase {
    func testTheSharesAddUpToTheLimit() {
        let budget = MemoryBudget(limit: 1_000_000)
        XCTAssertEqual(MemoryBudget.Consumer.allCases.reduce(0) { $0 + budget[$1].share }, 1_000_000)
        XCTAssertEqual(budget[.outbound].share, 350_000)
        XCTAssertEqual(budget[.updateHistory].share, 250_000)
    }

    func testAChargeIfRoomStaysWithinTheShare() {
        let account = MemoryBudget(limit: 1_000)[.historyReplies] // a share of 100 bytes
        XCTAssertTrue(account.charge(ifRoomFor: 60))
        XCTAssertFalse(account.charge(ifRoomFor: 41))
        XCTAssertEqual(account.bytes, 60)
        XCTAssertTrue(account.charge(ifRoomFor: 40))
        XCTAssertFalse(account.isOver)
        account.charge(10)
        XCTAssertTrue(account.isOver)
        XCTAssertEqual(account.excess, 10)
        account.release(110)
        XCTAssertEqual(account.bytes, 0)
    }

    func testAChargeIsGivenBackWhenItsHolderGoes() {
        let account = MemoryBudget(limit: 1_000)[.snapshots]
        var charge: MemoryCharge? = MemoryCharge(250, to: account) // a share of 200 bytes
        XCTAssertEqual(account.bytes, 250)
        XCTAssertTrue(account.isOver)
        XCTAssertNotNil(charge)
        charge = nil
        XCTAssertEqual(account.bytes, 0)
    }

    func testConcurrentChargesNeverPassTheShare() async {
        let account = MemoryBudget(limit: 10_000)[.inbound] // 1,000 bytes
        let granted = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<8 {
                group.addTask { (0..<1_000).reduce(0) { sum, _ in sum + (account.charge(ifRoomFor: 3) ? 3 : 0) } }
            }
            return await group.reduce(0, +)
        }
        XCTAssertEqual(granted, account.bytes)
        XCTAssertLessThanOrEqual(account.bytes, 1_000)
        XCTAssertGreaterThan(account.bytes, 990)
    }

    func testSizesParseAsPeopleWriteThem() {
        XCTAssertEqual(MemorySize.parse("512M"), 512 << 20)
        XCTAssertEqual(MemorySize.parse("4G"), 4 << 30)
        XCTAssertEqual(MemorySize.parse("1.5GiB"), 3 << 29)
        XCTAssertEqual(MemorySize.parse(" 800 MB "), 800 << 20)
        XCTAssertEqual(MemorySize.parse("65536"), 65536)
        XCTAssertEqual(MemorySize.parse("2k"), 2048)
        for bad in ["", "G", "-1G", "0", "lots", "1e30G", "nan"] { XCTAssertNil(MemorySize.parse(bad), bad) }
        XCTAssertEqual(MemorySize.text(3 << 29), "1.5 GiB")
        XCTAssertEqual(MemorySize.text(512 << 20), "512 MiB")
        XCTAssertEqual(MemorySize.text(12), "12 bytes")
    }

    func testTheDefaultLimitIsHalfOfWhatTheProcessMayUse() {
        let available = MemorySize.available()
        XCTAssertGreaterThan(available, 64 << 20)
        XCTAssertEqual(MemorySize.defaultLimit(), available / 2)
    }
}
