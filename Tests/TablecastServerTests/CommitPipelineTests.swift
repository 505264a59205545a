import TableModel
import TablecastProtocol
import WebSocketTransport
import XCTest

@testable import TableStore
@testable import TablecastServer

/// The commit pipeline driven step by step, as the table actor drives it, without a store or a socket: what it
/// asks to write, publish, rebase or refuse after each intent and each commit outcome.
final class CommitPipelineTests: XCTestCase {
    private var engine = TableEngine(table: Table(contents: [SectionContent(rows: [RowContent(value: "a")])]))

    private func requester(_ connection: UInt64, client: String = "c") -> Requester {
        Requester(
            connection: WebSocketConnectionID(rawValue: connection), client: client, name: nil, user: nil, stable: true,
            principal: "")
    }

    private func use(_ fingerprint: String) -> RefUse { RefUse(table: "t", epoch: 1, intent: .text(fingerprint)) }

    /// Resolves an insert of `value` into `pipeline` as the table actor does: applied to the engine, recorded.
    private func insert(_ value: String, ref: String?, from connection: UInt64 = 1, into pipeline: inout CommitPipeline)
        throws
    {
        let intent = Intent.insert(at: RowPath(section: 0, row: 0), row: RowContent(value: .string(value)))
        let resolution = try engine.resolve(intent, base: nil)
        pipeline.willChange(engine)
        try engine.commit(resolution)
        let who = requester(connection)
        let record = CommitRecord(
            table: "t", version: Int64(resolution.version), batch: "{}", originClient: who.client, originRef: ref,
            time: 0)
        let entry = PendingGroup.Entry(
            requester: who, ref: ref, claim: nil, use: ref.map { _ in use(value) },
            update: WebSocketMessage(kind: .text, bytes: Array("update \(value)".utf8)), ack: Array("ack \(value)".utf8)
        )
        pipeline.take(
            entry, key: ref.map { RefKey(owner: who.refOwner, ref: $0) }, record: record,
            source: .init(requester: who, ref: ref, base: nil, intent: intent))
    }

    private func noop(ref: String, from connection: UInt64, into pipeline: inout CommitPipeline) {
        let who = requester(connection)
        pipeline.takeNoop(
            .init(connection: who.connection, ref: ref, message: .unsubscribed(ref: ref, table: "t")),
            source: .init(requester: who, ref: ref, base: nil, intent: .delete(RowRef(RowPath(section: 0, row: 0)))))
    }

    private func versions(_ action: CommitPipeline.Action?) -> [Int64]? {
        guard case .write(let records) = action else { return nil }
        return records.map(\.version)
    }

    private func published(_ action: CommitPipeline.Action?) -> PendingGroup? {
        guard case .publish(let group) = action else { return nil }
        return group
    }

    func testAGroupIsWrittenWhileTheNextResolvesAndGoesToTheCommitterBeforeTheFirstIsPublished() throws {
        var pipeline = CommitPipeline(recording: false)
        XCTAssertTrue(pipeline.isIdle)
        XCTAssertNil(pipeline.submit(), "nothing pending, nothing to write")
        try insert("x", ref: "r1", into: &pipeline)
        XCTAssertEqual(versions(pipeline.submit()), [1])
        XCTAssertTrue(pipeline.isWriting)
        // Two more resolve while the first is written; they wait for it.
        try insert("y", ref: "r2", into: &pipeline)
        try insert("z", ref: nil, into: &pipeline)
        XCTAssertNil(pipeline.submit(), "one group in flight at a time")
        let actions = pipeline.finish(.success(()))
        XCTAssertEqual(actions.count, 2)
        XCTAssertEqual(versions(actions.first), [2, 3], "the next group is written before the first is fanned out")
        XCTAssertEqual(published(actions.last)?.entries.map(\.ref), ["r1"])
        XCTAssertTrue(pipeline.isWriting)
        let last = pipeline.finish(.success(()))
        XCTAssertEqual(published(last.first)?.records.map(\.version), [2, 3])
        XCTAssertTrue(pipeline.isIdle)
        XCTAssertEqual(pipeline.finish(.success(())).count, 0, "an outcome with nothing in flight does nothing")
    }

    func testNoOpsNeedNoWriteButAreAnsweredAfterTheAcksBeforeThem() throws {
        var pipeline = CommitPipeline(recording: false)
        noop(ref: "n0", from: 2, into: &pipeline)
        let alone = published(pipeline.submit())
        XCTAssertEqual(alone?.deferred.map(\.ref), ["n0"], "a group of no-ops only is answered at once")
        XCTAssertTrue(pipeline.isIdle)

        try insert("x", ref: "r1", into: &pipeline)
        _ = pipeline.submit()
        noop(ref: "n1", from: 2, into: &pipeline)
        let actions = pipeline.finish(.success(()))
        XCTAssertEqual(actions.count, 2)
        XCTAssertEqual(published(actions[0])?.entries.map(\.ref), ["r1"])
        XCTAssertEqual(published(actions[1])?.deferred.map(\.ref), ["n1"], "the no-op's answer follows the ack")
        XCTAssertTrue(pipeline.isIdle)
    }

    func testARetryOfAnUncommittedIntentWaitsForTheOriginalsAckAndAReusedRefIsRefused() throws {
        var pipeline = CommitPipeline(recording: false)
        try insert("x", ref: "r1", into: &pipeline)
        let key = RefKey(owner: RefOwner(principal: "", client: "c"), ref: "r1")
        let source = PendingGroup.Source(
            requester: requester(7), ref: "r1", base: nil, intent: .delete(RowRef(RowPath(section: 0, row: 0))))
        // Pending: the retry is taken there.
        XCTAssertTrue(try pipeline.takeRetry(key, use("x"), from: WebSocketConnectionID(rawValue: 7), source: source))
        _ = pipeline.submit()
        // In flight: taken there too.
        XCTAssertTrue(try pipeline.takeRetry(key, use("x"), from: WebSocketConnectionID(rawValue: 8), source: source))
        XCTAssertThrowsError(
            try pipeline.takeRetry(key, use("other"), from: WebSocketConnectionID(rawValue: 9), source: source)
        ) {
            XCTAssertEqual(($0 as? ProtocolError)?.code, .refReused)
        }
        let other = RefKey(owner: RefOwner(principal: "", client: "c"), ref: "r2")
        XCTAssertFalse(
            try pipeline.takeRetry(other, use("x"), from: WebSocketConnectionID(rawValue: 7), source: source))
        let group = try XCTUnwrap(published(pipeline.finish(.success(())).first))
        XCTAssertEqual(group.duplicates.map(\.connection.rawValue), [7, 8], "both retries get the original's ack")
        XCTAssertEqual(group.duplicates.map(\.entry), [0, 0])
    }

    func testAConflictOnASharedStoreResolvesBothGroupsAgainFromTheFirstsStart() throws {
        let start = engine
        var pipeline = CommitPipeline(recording: true)
        try insert("x", ref: "r1", into: &pipeline)
        _ = pipeline.submit()
        try insert("y", ref: "r2", into: &pipeline)
        let actions = pipeline.finish(.failure(StoreError(.conflict, "another node committed version 1")))
        guard case .rebase(let replay, let entries, let checkingRefs) = actions.first, actions.count == 1 else {
            return XCTFail("expected one rebase, got \(actions)")
        }
        XCTAssertEqual(replay.sources.map(\.ref), ["r1", "r2"], "every intent both groups took, in order")
        XCTAssertEqual(replay.engineBefore?.table, start.table, "from before the first group")
        XCTAssertEqual(entries.map(\.ref), ["r1", "r2"], "their ref claims are released")
        XCTAssertFalse(checkingRefs, "a version conflict does not look refs up again")
        XCTAssertTrue(pipeline.isIdle)

        try insert("z", ref: "r3", into: &pipeline)
        _ = pipeline.submit()
        guard case .rebase(_, _, true) = pipeline.finish(.failure(StoreError(.duplicateRef, "ref r3 stored"))).first
        else {
            return XCTFail("a ref stored by another node is looked up again")
        }
    }

    func testAStorageFailureRefusesTheGroupAndWhatWasResolvedOnTopOfIt() throws {
        for recording in [false, true] {
            var pipeline = CommitPipeline(recording: recording)
            try insert("x", ref: "r1", into: &pipeline)
            _ = pipeline.submit()
            try insert("y", ref: "r2", into: &pipeline)
            noop(ref: "n", from: 3, into: &pipeline)
            let actions = pipeline.finish(.failure(StoreError(.io, "disk full")))
            guard case .fail(let failed, let lost, _) = actions.first, actions.count == 1 else {
                return XCTFail("expected one failure, got \(actions)")
            }
            XCTAssertEqual(failed.entries.map(\.ref), ["r1"])
            XCTAssertEqual(lost.entries.map(\.ref), ["r2"])
            XCTAssertEqual(lost.deferred.map(\.ref), ["n"], "a no-op resolved on the lost state is refused too")
            XCTAssertEqual(failed.replay.engineBefore != nil, recording, "only a shared store's group knows its start")
            XCTAssertTrue(pipeline.isIdle)
        }
    }

    func testAConflictOnAStoreOfItsOwnCannotRebaseAndFails() throws {
        var pipeline = CommitPipeline(recording: false)
        try insert("x", ref: nil, into: &pipeline)
        _ = pipeline.submit()
        guard case .fail = pipeline.finish(.failure(StoreError(.conflict, "version 1 exists"))).first else {
            return XCTFail("a group that recorded nothing cannot be resolved again")
        }
    }
}
