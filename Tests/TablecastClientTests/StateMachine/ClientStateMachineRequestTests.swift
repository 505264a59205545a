import TableModel
import TablecastProtocol
import TablecastTesting
import XCTest

@testable import TablecastClient

/// Requests, resumes and inbound messages of the client's state machine, stepped by hand.
final class ClientStateMachineRequestTests: XCTestCase {
    private func update(
        _ version: UInt64, insert value: String, id: String, origin: String = "other", ref: String? = nil
    ) -> ServerMessage {
        let batch = Batch(insertRows: [.init(at: RowPath(section: 0, row: 0), row: Row(id: id, value: .string(value)))])
        return .update(.init(table: "t", version: version, originClient: origin, originRef: ref, batch: batch))
    }

    /// A request refused as `unavailable` (nothing applied) goes again with the same ref after a delay that grows
    /// with each refusal; after the fifth retry the refusal is the answer.
    func testARequestRefusedAsUnavailableIsRetriedWithGrowingDelaysThenFails() throws {
        var harness = MachineHarness(backoff: Backoff(initial: .milliseconds(100), maximum: .seconds(10)))
        harness.goLive()
        let (id, first) = harness.request(.plain(.createTable(table: "t", sections: [], rules: RulesPatch())))
        let message = try XCTUnwrap(first.sent.first)
        XCTAssertEqual(message.ref, "p-\(id.rawValue)")
        for retry in 1...Machine.unavailableRetries {
            let refused = harness.receive(.error(ProtocolError(.unavailable, "store down", ref: message.ref)))
            XCTAssertEqual(refused.resumed.count, 0, "retried, not answered")
            let deadline = try XCTUnwrap(refused.scheduled.first?.deadline)
            let ceiling = Duration.milliseconds(100) * (1 << retry)
            XCTAssertTrue(deadline - harness.now >= ceiling / 2 && deadline - harness.now <= ceiling, "retry \(retry)")
            XCTAssertEqual(harness.advance(by: deadline - harness.now - .milliseconds(1)).sent, [])
            XCTAssertEqual(harness.advance(by: .milliseconds(1)).sent, [message], "the same message, with its ref")
        }
        let answered = harness.receive(.error(ProtocolError(.unavailable, "store down", ref: message.ref)))
        XCTAssertEqual(answered.resumed.map(\.id), [id])
        XCTAssertThrowsError(try answered.resumed[0].result.get()) {
            XCTAssertEqual(($0 as? ProtocolError)?.code, .unavailable)
        }
        XCTAssertEqual(harness.machine.requests.count, 0)
    }

    /// A retry that falls due while the connection is down waits for the resume, which sends it anyway.
    func testARetryDueWhileDisconnectedIsSentByTheResume() throws {
        var harness = MachineHarness()
        harness.goLive()
        let (_, first) = harness.request(.plain(.listTables))
        let message = try XCTUnwrap(first.sent.first)
        harness.receive(.error(ProtocolError(.unavailable, "shutting down", ref: message.ref)))
        harness.loseSocket()
        let retryDeadline = try XCTUnwrap(
            harness.timers.first { if case .retryRequest = $0.timer { true } else { false } }?.deadline)
        let reconnectDeadline = try XCTUnwrap(
            harness.timers.first { if case .reconnect = $0.timer { true } else { false } }?.deadline)
        let early = harness.advance(by: min(retryDeadline, reconnectDeadline) - harness.now)
        XCTAssertEqual(early.sent, [], "nothing is written without an open socket")
        let resumed = harness.goLive()
        XCTAssertEqual(resumed.sent.filter { $0.ref == message.ref }, [message])
    }

    /// After a reconnect every unanswered request goes again in its original order with its original ref (the
    /// server answers a retried intent with its first ack), and so does the in-flight optimistic intent.
    func testUnansweredIntentsAreResentWithTheirRefsAfterAReconnect() throws {
        var harness = MachineHarness()
        harness.goLive()
        harness.subscribe("t")
        let insert = Intent.insert(at: RowPath(section: 0, row: 0), row: RowContent(value: "z"))
        let (answered, _) = harness.request(.intent(table: "t", base: .replica, insert))
        let (mine, _) = harness.request(.intent(table: "t", base: .current, insert), ref: "mine-1")
        let (fresh, _) = harness.request(.intent(table: "t", base: .version(2), insert))
        let (submitted, _) = harness.machine.submit(
            .submit(.edit(RowRef(RowPath(section: 0, row: 1), id: "r2"), value: "B")), on: "t", ref: "optimistic-1")
        XCTAssertNotNil(try submitted.get())
        harness.receive(.ack(.init(ref: "p-\(answered.rawValue)", table: "t", version: 4)))
        XCTAssertEqual(harness.machine.requests.keys.sorted(), [mine, fresh])

        harness.loseSocket()
        let resumed = harness.goLive().sent
        XCTAssertEqual(
            resumed.map(\.ref), [nil, nil, "mine-1", "p-\(fresh.rawValue)", "optimistic-1"],
            "hello, resubscribe, requests, intent")
        XCTAssertEqual(resumed[2].body, .intent(table: "t", base: nil, insert))
        XCTAssertEqual(resumed[3].body, .intent(table: "t", base: 2, insert))
        XCTAssertEqual(
            resumed[4].body,
            .intent(table: "t", base: 3, .edit(RowRef(RowPath(section: 0, row: 1), id: "r2"), value: "B")))
    }

    /// Subscriptions resume after a reconnect from the replica's version and epoch (only what was missed is sent);
    /// one still waiting for its first answer is re-sent with its ref, and a replica out of step asks for a snapshot.
    func testResubscribesResumeFromTheReplicaWithSinceAndEpoch() throws {
        var harness = MachineHarness()
        harness.goLive()
        harness.subscribe("t", version: 3, epoch: "e1")
        let (pending, asked) = harness.request(.subscribe("u"))
        XCTAssertEqual(asked.sent.map(\.body), [.subscribe(table: "u", since: nil, epoch: nil)])
        let applied = harness.receive(update(4, insert: "z", id: "r4"))
        guard case .update(_, let replica)? = applied.events.first else { return XCTFail("\(applied)") }
        XCTAssertEqual(replica.version, 4)
        XCTAssertEqual(harness.machine.replica(of: "t")?.table.sections[0].rows.map(\.value), ["z", "a", "b", "c"])

        harness.loseSocket()
        let resumed = harness.goLive().sent
        XCTAssertEqual(
            resumed.map(\.body),
            [
                .hello(client: "me", name: nil, token: nil), .subscribe(table: "t", since: 4, epoch: "e1"),
                .subscribe(table: "u", since: nil, epoch: nil),
            ])
        XCTAssertEqual(resumed[2].ref, "p-\(pending.rawValue)")

        // An update that skips a version cannot apply: the replica waits for a fresh snapshot meanwhile.
        let gap = harness.receive(update(6, insert: "y", id: "r6"))
        XCTAssertEqual(gap.sent.map(\.body), [.subscribe(table: "t", since: nil, epoch: nil)])
        XCTAssertEqual(harness.receive(update(7, insert: "x", id: "r7")).count, 0, "ignored while resyncing")
        harness.loseSocket()
        XCTAssertEqual(
            harness.goLive().sent.map(\.body)[1], .subscribe(table: "t", since: nil, epoch: nil),
            "a snapshot, not a resume")
    }

    /// Answers go to the request with their ref; an ack nobody waits for changes nothing, and an error nobody
    /// waits for is reported as a refusal.
    func testAnAckForAnUnknownRequestChangesNothingAndAnUnknownErrorIsARefusal() throws {
        var harness = MachineHarness()
        harness.goLive()
        harness.subscribe("t")
        let (id, _) = harness.request(.plain(.listTables))
        XCTAssertEqual(harness.receive(.ack(.init(ref: "nobody", table: "t", version: 9))).count, 0)
        XCTAssertEqual(harness.receive(.ack(.init(ref: nil, table: "t", version: 9))).count, 0)
        XCTAssertEqual(harness.machine.requests.keys.sorted(), [id], "still waiting")
        XCTAssertEqual(harness.machine.replica(of: "t")?.version, 3)
        let refused = harness.receive(.error(ProtocolError(.forbidden, "presence needs a name", ref: "nobody")))
        guard case .refusal(let error)? = refused.events.first, refused.count == 1 else { return XCTFail("\(refused)") }
        XCTAssertEqual(error.code, .forbidden)
        let tables = ServerMessage.tables(ref: "p-\(id.rawValue)", [])
        let answered = harness.receive(tables)
        XCTAssertEqual(answered.resumed.map(\.id), [id])
        XCTAssertEqual(try answered.resumed[0].result.get(), tables)
    }

    /// A refused subscribe ends the subscription; a cancelled one that never got its snapshot ends too, while a
    /// cancelled request leaves the rest alone.
    func testRefusedAndCancelledSubscribesEndTheirSubscription() throws {
        var harness = MachineHarness()
        harness.goLive()
        let (missing, asked) = harness.request(.subscribe("missing"))
        let refused = harness.receive(.error(ProtocolError(.noSuchTable, "no table missing", ref: asked.sent[0].ref)))
        XCTAssertEqual(refused.resumed.map(\.id), [missing])
        XCTAssertNil(harness.machine.subscriptions["missing"])
        let (cancelled, _) = harness.request(.subscribe("slow"))
        XCTAssertNotNil(harness.machine.subscriptions["slow"])
        let cancel = harness.step { $0.cancel(cancelled) }
        XCTAssertThrowsError(try cancel.resumed[0].result.get()) { XCTAssertTrue($0 is CancellationError) }
        XCTAssertNil(harness.machine.subscriptions["slow"])
        XCTAssertEqual(harness.step { $0.cancel(cancelled) }.count, 0, "cancelled once")
        XCTAssertEqual(harness.machine.requests.count, 0)
    }

    /// An optimistic intent refused as `unavailable` stays in flight and shown, goes again with its ref after
    /// delays that grow up to the backoff's maximum, and is never given up; its ack settles it.
    func testAnOptimisticIntentRefusedAsUnavailableIsResentWithGrowingDelaysUntilItLands() throws {
        var harness = MachineHarness(backoff: Backoff(initial: .milliseconds(20), maximum: .seconds(1)))
        harness.goLive()
        harness.subscribe("t")
        let edit = Intent.edit(RowRef(RowPath(section: 0, row: 0), id: "r1"), value: "A")
        let (submitted, first) = harness.machine.submit(.submit(edit), on: "t")
        let waiter = try XCTUnwrap(submitted.get())
        let message = try XCTUnwrap(first.sent.first)
        var delays: [Duration] = []
        for _ in 0..<10 {
            let refused = harness.receive(.error(ProtocolError(.unavailable, "store down", ref: message.ref)))
            let deadline = try XCTUnwrap(refused.scheduled.first?.deadline)
            delays.append(deadline - harness.now)
            XCTAssertEqual(harness.advance(by: deadline - harness.now).sent, [message])
        }
        for (attempt, delay) in delays.enumerated() {
            let ceiling = min(Duration.seconds(1), .milliseconds(20) * (1 << (attempt + 1)))
            XCTAssertTrue(delay >= ceiling / 2 && delay <= ceiling, "refusal \(attempt + 1): \(delay)")
        }
        XCTAssertEqual(harness.machine.predicted("t")?.sections[0].rows.first?.value, "A", "still shown while it waits")
        let landed = harness.receive(.ack(.init(ref: message.ref, table: "t", version: 4)))
        XCTAssertEqual(landed.settled.map(\.id), [waiter])
        XCTAssertEqual(harness.machine.pendingIntentCount("t"), 0)
        XCTAssertEqual(harness.advance(by: .seconds(10)).sent, [], "no resend once answered")
    }

    /// The own update of an in-flight optimistic intent is recognised by its ref and not shown twice; dropping
    /// the table fails the intents still waiting.
    func testOwnUpdatesConfirmThePredictionAndADropFailsWaitingIntents() throws {
        var harness = MachineHarness()
        harness.goLive()
        harness.subscribe("t")
        let insert = Intent.insert(at: RowPath(section: 0, row: 0), row: RowContent(value: "z"))
        let (first, sent) = harness.machine.submit(.submit(insert), on: "t")
        let (second, queued) = harness.machine.submit(.submit(insert), on: "t")
        XCTAssertEqual(sent.sent.count, 1)
        XCTAssertEqual(queued.sent.count, 0, "one in flight at a time")
        let ref = sent.sent[0].ref
        harness.receive(update(4, insert: "z", id: "r4", origin: "me", ref: ref))
        XCTAssertEqual(harness.machine.predicted("t")?.sections[0].rows.map(\.value), ["z", "z", "a", "b", "c"])
        let acked = harness.receive(.ack(.init(ref: ref, table: "t", version: 4, created: ["r4"])))
        XCTAssertEqual(acked.settled.map(\.id), [try first.get()!])
        XCTAssertEqual(acked.sent.count, 1, "the queued intent goes next")
        let dropped = harness.receive(.dropped(table: "t"))
        XCTAssertEqual(dropped.settled.map(\.id), [try second.get()!])
        XCTAssertThrowsError(try dropped.settled[0].result.get()) {
            XCTAssertEqual(($0 as? ProtocolError)?.code, .noSuchTable)
        }
        XCTAssertNil(harness.machine.subscriptions["t"])
        XCTAssertEqual(harness.machine.inFlightIntents.count, 0)
    }
}
