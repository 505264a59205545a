import TableModel
import TablecastProtocol
import XCTest

@testable import TableStore
@testable import TablecastServer

/// The table actor's smaller decisions, each a value: ref idempotency, the replication strategy and its
/// watermarks, the catch-up plan and presence pacing (time stepped by hand).
final class TableDecisionTests: XCTestCase {
    private let key = RefKey(owner: RefOwner(principal: "p", client: "c"), ref: "r1")

    // MARK: Refs

    func testAFingerprintTellsARetryFromAnotherIntentAndIgnoresTheBase() {
        let insert = Intent.insert(at: RowPath(section: 0, row: 0), row: RowContent(value: "a"))
        let other = Intent.insert(at: RowPath(section: 0, row: 0), row: RowContent(value: "b"))
        XCTAssertEqual(IntentRef.fingerprint(insert, on: "t"), IntentRef.fingerprint(insert, on: "t"))
        XCTAssertNotEqual(IntentRef.fingerprint(insert, on: "t"), IntentRef.fingerprint(other, on: "t"))
        XCTAssertNotEqual(IntentRef.fingerprint(insert, on: "t"), IntentRef.fingerprint(insert, on: "u"))
        XCTAssertEqual(IntentRef.fingerprint(insert, on: "t").stored.count, 16)
    }

    /// A key is hashed once, when it is made: a key of the same ref of the same owner is equal to it, and a key that
    /// differs in any field is another key, in a dictionary too.
    func testARefKeyIsEqualOnlyToTheSameRefOfTheSameOwner() {
        let same = RefKey(owner: RefOwner(principal: "p", client: "c"), ref: "r1")
        XCTAssertEqual(key, same)
        XCTAssertEqual(key.hashValue, same.hashValue)
        let others = [
            RefKey(owner: RefOwner(principal: "", client: "c"), ref: "r1"),
            RefKey(owner: RefOwner(principal: "p", client: "d"), ref: "r1"),
            RefKey(owner: RefOwner(principal: "p", client: "c"), ref: "r2"),
            RefKey(owner: RefOwner(principal: "pc", client: ""), ref: "r1"),
        ]
        for other in others { XCTAssertNotEqual(key, other) }
        let indices = Dictionary(uniqueKeysWithValues: ([key] + others).enumerated().map { ($1, $0) })
        XCTAssertEqual(indices[same], 0)
        XCTAssertEqual(others.map { indices[$0] }, [1, 2, 3, 4])
    }

    func testTheRegistryDecidesWhenItIsCompleteAndTheStoreOtherwise() throws {
        let use = RefUse(table: "t", epoch: 1, intent: .hash(0xf))
        XCTAssertEqual(try IntentRef.lookup(key, use, known: nil, ownerLoaded: true, checkStore: false), .new)
        XCTAssertEqual(try IntentRef.lookup(key, use, known: nil, ownerLoaded: false, checkStore: false), .store)
        XCTAssertEqual(try IntentRef.lookup(key, use, known: nil, ownerLoaded: true, checkStore: true), .store)
        XCTAssertEqual(try IntentRef.lookup(key, use, known: use, ownerLoaded: true, checkStore: false), .store)
        XCTAssertThrowsError(
            try IntentRef.lookup(
                key, use, known: RefUse(table: "u", epoch: 1, intent: .hash(0xf)), ownerLoaded: true, checkStore: false)
        ) { error in
            XCTAssertEqual((error as? ProtocolError)?.code, .refReused)
            XCTAssertTrue((error as? ProtocolError)?.message.contains("on table 'u'") == true)
        }
        // A ref used on an earlier life of the same table name says so.
        let earlier = IntentRef.reused(
            "r1", of: "c", by: RefUse(table: "t", epoch: 1, intent: .hash(0xf)),
            for: RefUse(table: "t", epoch: 2, intent: .hash(0xf))
        )
        XCTAssertTrue(earlier.message.contains("earlier table named 't'"), earlier.message)
    }

    func testAStoredAckAnswersARetryOnlyOfTheSameIntent() throws {
        let use = RefUse(table: "t", epoch: 2, intent: .hash(0xf))
        XCTAssertFalse(try IntentRef.answer(stored: nil, for: key, use))
        XCTAssertTrue(
            try IntentRef.answer(
                stored: StoredAck(table: "t", epoch: 2, version: 5, ack: "{}", intent: "000000000000000f"), for: key,
                use))
        // Stored before epochs or fingerprints were: the table name decides.
        XCTAssertTrue(try IntentRef.answer(stored: StoredAck(table: "t", version: 5, ack: "{}"), for: key, use))
        XCTAssertThrowsError(
            try IntentRef.answer(
                stored: StoredAck(table: "t", epoch: 2, version: 5, ack: "{}", intent: "g"), for: key, use))
        XCTAssertThrowsError(
            try IntentRef.answer(
                stored: StoredAck(table: "t", epoch: 1, version: 5, ack: "{}", intent: "000000000000000f"), for: key,
                use))
    }

    func testAStoredAckIsSentWithTheTablesCurrentEpoch() throws {
        let ack = IntentRef.ack(#"{"type":"ack","ref":"r1","epoch":"old","version":5}"#, withEpoch: "new")
        guard case .object(let members) = try JSONValue(parsing: String(decoding: ack, as: UTF8.self)) else {
            return XCTFail()
        }
        XCTAssertEqual(members["epoch"], .string("new"))
        XCTAssertEqual(members["version"], .number(5))
        XCTAssertEqual(IntentRef.ack("not json", withEpoch: "new"), Array("not json".utf8), "sent as stored")
    }

    // MARK: Replication

    func testAStoreOfItsOwnHasNothingToFollowOrRecord() async throws {
        let local = TableReplication.local
        XCTAssertFalse(local.recordsGroups)
        XCTAssertFalse(local.reloadMayBringNews)
        guard case .followed(let batches) = await local.read(after: 7, table: "t") else { return XCTFail() }
        XCTAssertTrue(batches.entries.isEmpty)
    }

    func testNotificationsAreReadOnlyWhenNewAndWatchedAndIntentsFollowWhatWasNotRead() {
        var marks = StoreWatermarks(at: 3)
        XCTAssertFalse(marks.isAhead(of: 3))
        // A notification of this node's own commit, stored before it arrives: nothing to read.
        marks.stored(upTo: 5)
        XCTAssertFalse(marks.notified(upTo: 5, watched: true))
        // Another node's commit: read at once when someone here watches the table…
        XCTAssertTrue(marks.notified(upTo: 6, watched: true))
        // …otherwise remembered, listed, and followed when an intent arrives.
        XCTAssertFalse(marks.notified(upTo: 9, watched: false))
        XCTAssertEqual(marks.known, 9)
        XCTAssertEqual(marks.listed(5), 9, "`tables` lists what the store has")
        XCTAssertTrue(marks.isAhead(of: 5))
        XCTAssertFalse(marks.notified(upTo: 8, watched: false), "an older notification changes nothing")
        XCTAssertEqual(marks.known, 9)
        XCTAssertTrue(marks.notified(upTo: nil, watched: false), "a lost channel: read whatever there is")
        marks.stored(upTo: 9)
        XCTAssertFalse(marks.isAhead(of: 9))
    }

    // MARK: Catch-up

    func testACatchUpSendsTheMissedUpdatesWhenFewEnoughAndASnapshotOtherwise() {
        let limit = ServerContext.CatchUpLimit(messages: 10, bytes: 100)
        func plan(_ since: UInt64?, _ epoch: String? = "e") -> CatchUpPlan {
            CatchUpPlan(since: since, epoch: epoch, current: 20, tableEpoch: "e", limit: limit)
        }
        XCTAssertEqual(plan(nil, nil), .snapshot, "a client with nothing")
        XCTAssertEqual(plan(20), .upToDate)
        XCTAssertEqual(plan(15), .updates(after: 15))
        XCTAssertEqual(plan(10), .updates(after: 10), "exactly the limit of messages")
        XCTAssertEqual(plan(9), .snapshot, "more than the limit")
        XCTAssertEqual(plan(15, "old"), .snapshot, "another life of the table")
        XCTAssertEqual(plan(21), .snapshot, "a version this table never had")
        XCTAssertTrue(CatchUpPlan.fits([60, 40], limit))
        XCTAssertFalse(CatchUpPlan.fits([60, 41], limit))
    }

    // MARK: Presence

    func testPresenceDeltasGoOutAtMostOncePerIntervalWithWhatChangedMeanwhile() {
        var clock = TestClock()
        var pacer = PresencePacer<TestClock.Instant>()
        let interval = Duration.milliseconds(100)
        XCTAssertEqual(pacer.news(at: clock.now, interval: interval), .sendNow, "the first news goes out at once")
        pacer.sent(at: clock.now)
        clock.advance(by: .milliseconds(30))
        XCTAssertEqual(pacer.news(at: clock.now, interval: interval), .wait(.milliseconds(70)), "the rest of it")
        clock.advance(by: .milliseconds(20))
        XCTAssertEqual(pacer.news(at: clock.now, interval: interval), .waiting, "news meanwhile go with the next delta")
        clock.advance(by: .milliseconds(50))
        pacer.woke()
        XCTAssertEqual(pacer.news(at: clock.now, interval: interval), .sendNow)
        pacer.sent(at: clock.now)
        clock.advance(by: .milliseconds(250))
        XCTAssertEqual(pacer.news(at: clock.now, interval: interval), .sendNow, "after a quiet interval, at once again")
    }

    /// The interval grows with the audience past 2,000 subscribers, so that a table's deltas cost at most 20,000
    /// deliveries a second; a wake-up scheduled under a shorter interval waits out the rest of a longer one.
    func testPresenceIntervalGrowsWithTheAudience() {
        XCTAssertEqual(TableAudience.presenceInterval(subscribers: 0), .milliseconds(100))
        XCTAssertEqual(TableAudience.presenceInterval(subscribers: 2_000), .milliseconds(100))
        XCTAssertEqual(TableAudience.presenceInterval(subscribers: 4_000), .milliseconds(200))
        XCTAssertEqual(TableAudience.presenceInterval(subscribers: 10_000), .milliseconds(500))
        XCTAssertEqual(TableAudience.presenceInterval(subscribers: 100_000), .seconds(5))

        var clock = TestClock()
        var pacer = PresencePacer<TestClock.Instant>()
        pacer.sent(at: clock.now)
        XCTAssertEqual(pacer.news(at: clock.now, interval: .milliseconds(100)), .wait(.milliseconds(100)))
        clock.advance(by: .milliseconds(100))
        pacer.woke()
        XCTAssertEqual(pacer.news(at: clock.now, interval: .milliseconds(500)), .wait(.milliseconds(400)))
    }
}

/// A clock tests step by hand.
struct TestClock {
    struct Instant: InstantProtocol {
        var offset: Duration
        func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        func duration(to other: Instant) -> Duration { other.offset - offset }
        static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private(set) var now = Instant(offset: .zero)

    mutating func advance(by duration: Duration) { now = now.advanced(by: duration) }
}
