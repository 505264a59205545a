import XCTest

@testable import WebSocketTransport

/// The idle judgement, one sweep (one second) at a time.
final class LivenessTests: XCTestCase {
    private let policy = Liveness.Policy(pingAfterSeconds: 3, hangUpAfterSeconds: 5)

    private func sweeps(_ liveness: inout Liveness, _ count: Int) -> [Liveness.Action] {
        (0..<count).map { _ in liveness.sweep(policy) }
    }

    /// A new connection counts as just heard: its first sweep starts the silence, the PING follows three silent
    /// sweeps later and the hang-up two after that, and it keeps being reported until the connection is gone.
    func testASilentPeerIsPingedOnceThenHungUpOn() {
        var liveness = Liveness()
        XCTAssertEqual(sweeps(&liveness, 7), [.none, .none, .none, .ping, .none, .hangUp, .hangUp])
    }

    /// Bytes from the peer at any point start the silence over, so a peer that answers each PING is never hung up
    /// on, and the next silence gets a PING of its own.
    func testHearingFromThePeerStartsTheSilenceOver() {
        var liveness = Liveness()
        XCTAssertEqual(sweeps(&liveness, 4), [.none, .none, .none, .ping])
        liveness.heardFromPeer()
        XCTAssertEqual(sweeps(&liveness, 4), [.none, .none, .none, .ping])
        XCTAssertEqual(sweeps(&liveness, 1), [.none])
        liveness.heardFromPeer()
        liveness.heardFromPeer()
        XCTAssertEqual(sweeps(&liveness, 6), [.none, .none, .none, .ping, .none, .hangUp])
    }

    /// A peer heard from before every sweep is never pinged.
    func testABusyPeerIsNeverPinged() {
        var liveness = Liveness()
        for _ in 0..<100 {
            liveness.heardFromPeer()
            XCTAssertEqual(liveness.sweep(policy), .none)
        }
    }

    /// Spans under a second (a `Duration` of milliseconds is zero whole seconds) still ping after one silent sweep
    /// and hang up one later, never at once.
    func testSpansAreAtLeastOneSecondApart() {
        let zero = Liveness.Policy(pingAfterSeconds: 0, hangUpAfterSeconds: 0)
        XCTAssertEqual(zero.pingAfterSeconds, 1)
        XCTAssertEqual(zero.hangUpAfterSeconds, 2)
        var liveness = Liveness()
        XCTAssertEqual((0..<4).map { _ in liveness.sweep(zero) }, [.none, .ping, .hangUp, .hangUp])
    }
}
