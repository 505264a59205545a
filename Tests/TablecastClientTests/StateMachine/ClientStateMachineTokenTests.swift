import TableModel
import TablecastProtocol
import TablecastTesting
import WebSocketTransport
import XCTest

@testable import TablecastClient

/// Tokens from a provider, stepped by hand: asked before each hello, refreshed before `exp`, and a subscription the
/// server ends for the token.
final class ClientStateMachineTokenTests: XCTestCase {
    /// An unsigned JWT-shaped token with these claims (the client reads `exp` and never verifies).
    private func jwt(exp: Double?, sub: String = "ana") -> String {
        func base64URL(_ text: String) -> String {
            Data(text.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        }
        let claims = exp.map { #"{"sub":"\#(sub)","exp":\#(Int($0))}"# } ?? #"{"sub":"\#(sub)"}"#
        return base64URL(#"{"alg":"HS256","typ":"JWT"}"#) + "." + base64URL(claims) + ".c2lnbmF0dXJl"
    }

    private let welcome = ServerMessage.welcome(
        .init(
            ref: nil, client: "me", serverName: "test", serverVersion: "1", maxMessageBytes: 1 << 20,
            maxBatchEntries: 100, intentsPerSecond: 100))

    /// Hello waits for the provider; its token goes in hello, before the resubscriptions, every time a socket opens.
    func testHelloWaitsForTheProvidersTokenOnEverySocket() {
        var harness = MachineHarness(tokenProvider: { "unused" })
        harness.step { $0.connect() }
        let first = harness.socket
        let opened = harness.step { $0.socketOpened(first) }
        XCTAssertEqual(opened.tokensAsked, [.hello(first)])
        XCTAssertEqual(opened.sent, [], "nothing is written before the token")
        let token = jwt(exp: MachineHarness.wallClock + 600)
        let hello = harness.give(.success(token), for: .hello(first))
        XCTAssertEqual(hello.sent.map(\.body), [.hello(client: "me", name: nil, token: token)])
        harness.receive(welcome)
        harness.subscribe("t")

        harness.loseSocket()
        harness.advanceToNextTimer()
        let second = harness.socket
        XCTAssertEqual(harness.step { $0.socketOpened(second) }.tokensAsked, [.hello(second)])
        XCTAssertEqual(
            harness.give(.success(token), for: .hello(first)).count, 0,
            "a late answer for a socket that is gone changes nothing")
        let fresh = jwt(exp: MachineHarness.wallClock + 900)
        let resumed = harness.give(.success(fresh), for: .hello(second)).sent
        XCTAssertEqual(resumed.first?.body, .hello(client: "me", name: nil, token: fresh))
        XCTAssertEqual(resumed.dropFirst().map(\.body), [.subscribe(table: "t", since: 3, epoch: "e1")])
    }

    /// A provider that fails at hello is reported, and the socket closes: the reconnect asks again, with backoff.
    func testAFailedProviderAtHelloClosesTheSocketAndIsReported() {
        struct Offline: Error {}
        var harness = MachineHarness(tokenProvider: { throw Offline() })
        harness.step { $0.connect() }
        let socket = harness.socket
        harness.step { $0.socketOpened(socket) }
        let failed = harness.give(.failure(Offline()), for: .hello(socket))
        XCTAssertEqual(failed.sent, [])
        XCTAssertEqual(failed.closedSockets, [socket])
        guard case .refusal(let error)? = failed.events.first else { return XCTFail("\(failed)") }
        XCTAssertEqual(error.code, .unauthorized)
        XCTAssertTrue(error.message.hasPrefix("the token provider failed"), error.message)
    }

    /// A token with `exp` is refreshed a quarter of its remaining life before it (at most a minute before), with
    /// `refreshToken`; once acknowledged, the next refresh is scheduled for the new token. A provider that has
    /// nothing newer sends nothing.
    func testASignedTokenIsRefreshedBeforeItExpiresAndAgainAfterEachAck() {
        var harness = MachineHarness(tokenProvider: { "unused" })
        let token = jwt(exp: MachineHarness.wallClock + 100)
        let live = harness.goLive(token: token, welcome: welcome)
        let socket = harness.socket
        XCTAssertEqual(live.scheduled.map(\.timer), [.refreshToken(socket)])
        XCTAssertEqual(live.scheduled.first?.deadline, harness.now + .seconds(75), "100 s left: asked 25 s before")
        XCTAssertEqual(harness.advance(by: .seconds(74)).tokensAsked, [])
        XCTAssertEqual(harness.advance(by: .seconds(1)).tokensAsked, [.refresh(socket)])

        XCTAssertEqual(harness.give(.success(token), for: .refresh(socket)).count, 0)
        let fresh = jwt(exp: MachineHarness.wallClock + 3600)
        let sent = harness.give(.success(fresh), for: .refresh(socket)).sent
        XCTAssertEqual(sent.map(\.body), [.refreshToken(token: fresh)])
        let acked = harness.receive(.tokenRefreshed(ref: sent[0].ref, expires: MachineHarness.wallClock + 3600))
        XCTAssertEqual(harness.machine.token, fresh)
        XCTAssertEqual(acked.scheduled.first?.deadline, harness.now + .seconds(3540), "an hour left: a minute before")
    }

    /// A refused refresh keeps the current token and is reported; a token without `exp` is never refreshed.
    func testARefusedRefreshKeepsTheTokenAndATokenWithoutExpIsNotRefreshed() {
        var harness = MachineHarness(tokenProvider: { "unused" })
        let token = jwt(exp: MachineHarness.wallClock + 100)
        harness.goLive(token: token, welcome: welcome)
        let socket = harness.socket
        harness.advanceToNextTimer()
        let other = jwt(exp: MachineHarness.wallClock + 900, sub: "mallory")
        let sent = harness.give(.success(other), for: .refresh(socket)).sent
        let refused = harness.receive(
            .error(ProtocolError(.unauthorized, "token refused: not this connection's user", ref: sent[0].ref)))
        XCTAssertEqual(harness.machine.token, token)
        XCTAssertEqual(refused.scheduled.count, 0)
        guard case .refusal(let error)? = refused.events.first else { return XCTFail("\(refused)") }
        XCTAssertEqual(error.code, .unauthorized)

        var plain = MachineHarness(tokenProvider: { "unused" })
        XCTAssertEqual(plain.goLive(token: "team-token", welcome: welcome).scheduled.count, 0, "no exp, no refresh")
    }

    /// A subscription the server ends (no ref: the token no longer reads the table) is forgotten and reported; its
    /// optimistic intents fail.
    func testASubscriptionTheServerEndsIsForgottenAndReported() {
        var harness = MachineHarness()
        harness.goLive()
        harness.subscribe("t")
        let ended = harness.receive(
            .unsubscribed(ref: nil, table: "t", reason: "the connection's token no longer lets it read table 't'"))
        XCTAssertNil(harness.machine.replica(of: "t"))
        guard case .subscriptionEnded(let table, let reason)? = ended.events.first else { return XCTFail("\(ended)") }
        XCTAssertEqual(table, "t")
        XCTAssertEqual(reason, "the connection's token no longer lets it read table 't'")
        XCTAssertEqual(harness.receive(.unsubscribed(ref: nil, table: "t", reason: nil)).count, 0, "once")
    }
}

extension MachineHarness {
    /// Connects, gives the provider's `token` to the hello and welcomes the client; the welcome's actions.
    @discardableResult
    fileprivate mutating func goLive(token: String, welcome: ServerMessage) -> [Machine.Action] {
        step { $0.connect() }
        let socket = self.socket
        step { $0.socketOpened(socket) }
        give(.success(token), for: .hello(socket))
        return receive(welcome)
    }
}
