import TableModel
import TablecastProtocol
import TablecastTesting
import WebSocketTransport
import XCTest

@testable import TablecastClient

/// The client's connection as a state machine stepped by hand: reconnect delays, failover, close.
final class ClientStateMachineConnectionTests: XCTestCase {
    /// Each lost attempt waits between half and all of a ceiling that doubles from `initial` up to `maximum`; the
    /// next attempt starts at the deadline, not before; a welcome starts the growth over.
    func testReconnectDelaysGrowWithJitterUpToTheMaximumAndAWelcomeResetsThem() {
        let backoff = Backoff(initial: .milliseconds(100), maximum: .seconds(1))
        var harness = MachineHarness(backoff: backoff)
        XCTAssertEqual(harness.step { $0.connect() }.openedEndpoints, [0])
        var delays: [Duration] = []
        for attempt in 0..<8 {
            let lost = harness.loseSocket()
            guard case .reconnecting(let delay)? = lost.states.first else { return XCTFail("\(lost)") }
            XCTAssertEqual(lost.scheduled.first?.deadline, harness.now + delay, "the timer is due when the state says")
            let ceiling = min(Duration.seconds(1), .milliseconds(100) * (1 << attempt))
            XCTAssertTrue(
                delay >= ceiling / 2 && delay <= ceiling,
                "attempt \(attempt): \(delay) within \(ceiling / 2)…\(ceiling)")
            delays.append(delay)
            XCTAssertEqual(
                harness.advance(by: delay - .milliseconds(1)).openedEndpoints, [], "nothing before the deadline")
            XCTAssertEqual(
                harness.advance(by: .milliseconds(1)).openedEndpoints, [0], "the next attempt at the deadline")
        }
        XCTAssertTrue(
            delays.suffix(4).allSatisfy { $0 >= .milliseconds(500) && $0 <= .seconds(1) }, "capped: \(delays)")
        XCTAssertGreaterThan(Set(delays.suffix(4)).count, 1, "jittered, not all equal: \(delays)")

        let live = harness.goLive()
        XCTAssertEqual(live.states, [.live])
        XCTAssertEqual(harness.machine.connectionState, .live)
        XCTAssertNil(harness.machine.problem)
        guard case .reconnecting(let delay)? = harness.loseSocket().states.first else { return XCTFail() }
        XCTAssertTrue(delay <= .milliseconds(100), "back to the first delay after a welcome: \(delay)")
    }

    /// The injected randomness decides the jitter: the same seed replays the same delays, another draws others.
    func testTheJitterComesFromTheInjectedGenerator() {
        func delays(seed: UInt64) -> [Duration] {
            var harness = MachineHarness(random: SeededGenerator(seed: seed))
            harness.step { $0.connect() }
            return (0..<6).compactMap { _ in
                defer { harness.advanceToNextTimer() }
                if case .reconnecting(let delay)? = harness.loseSocket().states.first { return delay }
                return nil
            }
        }
        XCTAssertEqual(delays(seed: 7).count, 6)
        XCTAssertEqual(delays(seed: 7), delays(seed: 7))
        XCTAssertNotEqual(delays(seed: 7), delays(seed: 8))
    }

    /// Several servers are tried in turn, one more after each lost connection, whether it was live or never opened.
    func testFailoverTriesTheNextServerAfterEachLossInTurn() {
        var harness = MachineHarness(endpoints: 3)
        var endpoints = harness.goLive().openedEndpoints
        harness.loseSocket()
        endpoints += harness.advanceToNextTimer().openedEndpoints
        harness.loseSocket(reason: "conn fail: ECONNREFUSED")
        XCTAssertEqual(harness.machine.problem, "conn fail: ECONNREFUSED")
        endpoints += harness.goLive().openedEndpoints
        harness.loseSocket()
        endpoints += harness.advanceToNextTimer().openedEndpoints
        XCTAssertEqual(endpoints, [0, 1, 2, 0])
    }

    /// The connection states an application sees, and events of a socket that is no longer current (a late
    /// close, a late message, a reconnect timer overtaken by `close`) change nothing.
    func testStatesFollowTheLinkAndStaleEventsAreIgnored() {
        var harness = MachineHarness()
        XCTAssertEqual(harness.machine.connectionState, .idle)
        XCTAssertEqual(harness.step { $0.connect() }.states, [.connecting])
        XCTAssertEqual(harness.step { $0.connect() }.count, 0, "connecting once")
        let first = harness.socket
        XCTAssertEqual(
            harness.step { $0.socketOpened(first) }.sent.map(\.body), [.hello(client: "me", name: nil, token: nil)])
        XCTAssertEqual(harness.machine.connectionState, .connecting, "open, not welcomed yet")
        harness.goLive()
        harness.loseSocket()
        harness.advanceToNextTimer()
        let second = harness.socket
        XCTAssertNotEqual(first, second)
        let now = harness.now
        let frame = WebSocketCloseFrame(code: .normalClosure, reason: "")
        XCTAssertEqual(harness.step { $0.socketClosed(first, frame, now: now) }.count, 0)
        XCTAssertEqual(harness.step { $0.receive(.dropped(table: "t"), on: first, now: now) }.count, 0)
        XCTAssertEqual(harness.step { $0.socketOpened(first) }.count, 0)
        XCTAssertEqual(harness.machine.connectionState, .connecting)
        XCTAssertEqual(harness.step { $0.dropConnection() }.closedSockets, [second])
        harness.loseSocket()
        harness.step { $0.close() }
        XCTAssertEqual(harness.advanceToNextTimer().count, 0, "no reconnect after close")
        XCTAssertEqual(harness.machine.connectionState, .closed)
    }

    /// An abrupt drop aborts the socket (no close frame); once the transport reports it lost, the client reconnects
    /// and resubscribes with since, as after any lost connection.
    func testAnAbruptDropAbortsTheSocketAndResumesWithSince() {
        var harness = MachineHarness()
        harness.goLive()
        harness.subscribe("t")
        let first = harness.socket
        let dropped = harness.step { $0.dropConnection(abruptly: true) }
        XCTAssertEqual(dropped.closedSockets, [], "no close frame")
        XCTAssertEqual(
            dropped.commands.compactMap { if case .abort(let socket) = $0 { socket } else { nil } }, [first])
        harness.loseSocket()
        let resumed = harness.goLive().sent.map(\.body)
        XCTAssertNotEqual(harness.socket, first)
        XCTAssertTrue(resumed.contains(.subscribe(table: "t", since: 3, epoch: "e1")), "\(resumed)")
    }

    /// Close closes the socket, fails every awaited request and optimistic intent with `closed`, says so once,
    /// and from then on requests fail at once and nothing reopens.
    func testCloseFailsEverythingWaitingAndLaterEventsDoNothing() throws {
        var harness = MachineHarness()
        harness.goLive()
        harness.subscribe("t")
        let (list, _) = harness.request(.plain(.listTables))
        let (submitted, _) = harness.machine.submit(
            .submit(.edit(RowRef(RowPath(section: 0, row: 0), id: "r1"), value: "A")), on: "t")
        let waiter = try XCTUnwrap(submitted.get())
        let (retried, _) = harness.request(.plain(.dropTable(table: "u")))
        harness.receive(.error(ProtocolError(.unavailable, "shutting down", ref: "p-\(retried.rawValue)")))
        let socket = harness.socket

        let closed = harness.step { $0.close() }
        XCTAssertEqual(closed.closedSockets, [socket])
        XCTAssertEqual(closed.resumed.map(\.id), [list, retried])
        for (_, result) in closed.resumed {
            XCTAssertThrowsError(try result.get()) { XCTAssertEqual($0 as? TablecastClientError, .closed) }
        }
        XCTAssertEqual(closed.settled.map(\.id), [waiter])
        XCTAssertThrowsError(try closed.settled[0].result.get()) {
            XCTAssertEqual($0 as? TablecastClientError, .closed)
        }
        XCTAssertEqual(closed.states, [.closed])
        XCTAssertEqual(harness.machine.requests.count, 0)

        XCTAssertEqual(harness.step { $0.close() }.count, 0, "closing twice says nothing more")
        XCTAssertEqual(harness.advance(by: .seconds(60)).count, 0, "the retry timer finds nothing to send")
        let now = harness.now
        XCTAssertEqual(
            harness.step { $0.receive(.ack(.init(ref: "p-1", table: "t", version: 4)), on: socket, now: now) }.count, 0)
        let (late, actions) = harness.request(.plain(.listTables))
        XCTAssertEqual(actions.resumed.map(\.id), [late])
        XCTAssertThrowsError(try actions.resumed[0].result.get()) {
            XCTAssertEqual($0 as? TablecastClientError, .closed)
        }
        XCTAssertEqual(harness.step { $0.connect() }.count, 0)
        XCTAssertEqual(harness.machine.replica(of: "t")?.version, 3, "the replica stays readable")
    }

    /// A TLS handshake that fails is reported with its reason before the reconnect.
    func testAFailedTLSHandshakeIsReportedAndRetried() {
        var harness = MachineHarness()
        harness.step { $0.connect() }
        let (socket, now) = (harness.socket, harness.now)
        let frame = WebSocketCloseFrame(code: .tlsHandshakeFailed, reason: "the server's certificate did not verify")
        let actions = harness.step { $0.socketClosed(socket, frame, now: now) }
        guard case .tlsFailed(let reason)? = actions.events.first else { return XCTFail("\(actions)") }
        XCTAssertEqual(reason, "the server's certificate did not verify")
        XCTAssertEqual(actions.scheduled.map(\.timer), [.reconnect(after: socket)])
    }
}
