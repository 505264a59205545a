import XCTest

@testable import WebSocketTransport

final class HandshakeGateTests: XCTestCase {
    private let second = HandshakeGate.stallNanoseconds

    /// Handshakes in flight for less than the stall time do not count, however many; once that old they do, per
    /// address, until they end.
    func testOnlyStalledHandshakesCount() {
        var gate = HandshakeGate(maxPerAddress: 2)
        for key in 0..<1000 {
            XCTAssertTrue(gate.admits("10.0.0.1", now: 0))
            gate.began(UInt(key), from: "10.0.0.1", at: 0)
        }
        // Half a second on: none has stalled yet.
        XCTAssertTrue(gate.admits("10.0.0.1", now: second / 2))
        for key in 2..<1000 { gate.ended(UInt(key)) }
        // Keys 0 and 1 are still going a second later: the address is at its cap, others are not.
        XCTAssertFalse(gate.admits("10.0.0.1", now: second))
        XCTAssertTrue(gate.admits("10.0.0.2", now: second))
        gate.ended(0)
        XCTAssertTrue(gate.admits("10.0.0.1", now: second))
    }

    /// A key reused by a new connection (lws frees and reallocates its connection structs) is a new handshake: the
    /// old one's age does not make it stalled.
    func testAReusedKeyStartsAfresh() {
        var gate = HandshakeGate(maxPerAddress: 1)
        gate.began(7, from: "10.0.0.1", at: 0)
        gate.ended(7)
        gate.began(7, from: "10.0.0.1", at: second / 2)
        XCTAssertTrue(gate.admits("10.0.0.1", now: second))
        XCTAssertFalse(gate.admits("10.0.0.1", now: second + second / 2))
    }
}
