import Foundation
import JWTKit
import Synchronization
import TableModel
import TablecastServer
import XCTest

@testable import TablecastClient

/// The token provider against a real server taking signed tokens: short-lived tokens are refreshed on the open
/// connection, and a connection closed because its token ended (4001) comes back with a fresh one.
final class TokenProviderTests: XCTestCase {
    private static let secret = Array("token-provider-tests-secret-0123456789".utf8)

    private func makeServer() async throws -> TestServer {
        let verifier = SignedTokenVerifier(keys: [try await .secret(Self.secret)])
        return try await TestServer(policy: AccessPolicy(grants: nil, verifier: verifier))
    }

    /// An HS256 token for user "ana" that lives `ttl` seconds from now, with these table grants.
    private static func mint(ttl: Double, tables: [String: String] = ["*": "admin"]) async throws -> String {
        func base64URL(_ bytes: some Sequence<UInt8>) -> String {
            Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        }
        let header: JSONValue = ["alg": "HS256", "typ": "JWT"]
        let payload: JSONValue = [
            "sub": "ana", "exp": .number((Date().timeIntervalSince1970 + ttl).rounded(.up)),
            "tablecast": ["tables": .object(tables.mapValues { .string($0) })],
        ]
        let key = try await JWTKeyCollection().add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256).getKey()
        let signed = base64URL(header.jsonBytes) + "." + base64URL(payload.jsonBytes)
        return signed + "." + base64URL(try key.sign(Array(signed.utf8)))
    }

    /// The events a client reported, in order.
    private final class Events: Sendable {
        private let list = Mutex<[TablecastClient.Event]>([])
        func append(_ event: TablecastClient.Event) { list.withLock { $0.append(event) } }
        func withLock<T>(_ body: ([TablecastClient.Event]) -> T) -> T { list.withLock { body($0) } }
    }

    /// A client of `server` whose tokens come from `provider`, recording its events.
    private func client(
        of server: TestServer, events: Events,
        _ provider: @escaping @Sendable () async throws -> String
    ) throws -> TablecastClient {
        var configuration = TablecastClient.Configuration(url: server.url, clientID: "ana-laptop")
        configuration.tokenProvider = provider
        return try TablecastClient(configuration: configuration) { events.append($0) }
    }

    /// Two-second tokens (three at most, `exp` rounded up), refreshed at three quarters of their life: the connection outlives many of them (the server would close it
    /// 5 s after one ends), and a refreshed token that no longer reads a table ends that subscription.
    func testShortLivedTokensAreRefreshedAndTheConnectionStaysOpen() async throws {
        let server = try await makeServer()
        let calls = Atomic<Int>(0)
        let events = Events()
        let client = try client(of: server, events: events) {
            let call = calls.add(1, ordering: .relaxed).newValue
            return try await Self.mint(ttl: 2, tables: call >= 3 ? ["kept": "admin"] : ["*": "admin"])
        }
        client.connect()
        _ = try await client.createTable("kept", sections: [SectionContent()])
        _ = try await client.createTable("lost")
        _ = try await client.subscribe("kept")
        _ = try await client.subscribe("lost")
        let started = ContinuousClock.now
        try await eventually(timeout: .seconds(15), "a refresh that drops table 'lost'") {
            events.withLock {
                $0.contains { if case .subscriptionEnded("lost", _) = $0 { true } else { false } }
            }
        }
        XCTAssertNil(client.replica(of: "lost"))
        // Well past the first token's end (at most 3 s after hello, its exp rounded up) and the server's 5 s of
        // leeway: still the first connection.
        try await Task.sleep(until: started + .seconds(10))
        XCTAssertGreaterThanOrEqual(calls.load(ordering: .relaxed), 4, "hello and a refresh every 1.5–2.25 s")
        XCTAssertEqual(client.connectionState, ConnectionState.live)
        XCTAssertFalse(
            events.withLock { $0.contains { if case .state(.reconnecting) = $0 { true } else { false } } },
            "never reconnected")
        let ack = try await client.insert("kept", at: RowPath(section: 0, row: 0), value: "still here")
        XCTAssertEqual(ack.version, 1)
        await client.close()
        await server.tearDown()
    }

    /// A provider with nothing newer lets the token end: the server closes the connection with 4001, and the client
    /// reconnects, asks the provider again, and resumes its subscription with the fresh token.
    func testAConnectionClosedWhenItsTokenEndsComesBackWithAFreshToken() async throws {
        let server = try await makeServer()
        let calls = Atomic<Int>(0)
        let short = try await Self.mint(ttl: 1)
        let events = Events()
        let client = try client(of: server, events: events) {
            // The hello and the refresh get the short token; the reconnect after the close a long one.
            calls.add(1, ordering: .relaxed).newValue <= 2 ? short : try await Self.mint(ttl: 600)
        }
        client.connect()
        _ = try await client.createTable("t", sections: [SectionContent()])
        _ = try await client.subscribe("t")
        try await eventually(timeout: .seconds(15), "closed with 4001 and live again") {
            events.withLock { events in
                guard
                    let lost = events.firstIndex(where: { if case .state(.reconnecting) = $0 { true } else { false } })
                else { return false }
                return events[lost...].contains { if case .state(.live) = $0 { true } else { false } }
            }
        }
        XCTAssertEqual(calls.load(ordering: .relaxed), 3)
        _ = try await client.insert("t", at: RowPath(section: 0, row: 0), value: "after")
        try await eventually { client.replica(of: "t")?.version == 1 }
        await client.close()
        await server.tearDown()
    }
}
