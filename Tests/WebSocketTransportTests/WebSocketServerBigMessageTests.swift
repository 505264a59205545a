import Prometheus
import WebSocketTransport
import XCTest

final class WebSocketServerBigMessageTests: XCTestCase {
    /// One 32 MiB message to a reader and to eight peers that read nothing: the reader gets it whole (sent as
    /// fragments), and the stalled peers are handed only what their sockets take plus one fragment each. Written
    /// whole, lws would copy what the socket does not take, 32 MiB for every peer.
    func testABigMessageGoesOutInFragmentsSoStalledPeersHoldNoCopyOfIt() async throws {
        let registry = PrometheusCollectorRegistry()
        let serverEvents = EventRecorder()
        let server = try WebSocketServer(
            configuration: .withMetrics(in: registry), onEvent: serverEvents.handler)
        let clientEvents = EventRecorder()
        let client = try WebSocketClient(configuration: .init(maxMessageSize: 64 << 20), onEvent: clientEvents.handler)
        let reader = client.connect(WebSocketConnectRequest(host: "127.0.0.1", port: server.port, path: "/reader"))
        let stalled = try (0..<8).map { _ in try RawSocket(port: server.port, receiveBuffer: 4096) }
        for socket in stalled { _ = socket.upgrade(path: "/stalled") }
        try await serverEvents.wait("9 opens") { $0.opened.count == 9 }
        let ids = serverEvents.opened.map(\.id)

        let size = 32 << 20
        let big = WebSocketMessage(kind: .binary, bytes: (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        server.send(big, to: ids)
        try await clientEvents.wait("the reader got it", timeout: .seconds(60)) { $0.messages(on: reader).count == 1 }
        XCTAssertEqual(clientEvents.messages(on: reader).first?.bytes, big.withUnsafeBytes { Array($0) })
        // `websocket_sent_bytes_total`: payload bytes handed to lws.
        let handed = try XCTUnwrap(metric("websocket_sent_bytes_total", port: server.port)) - size
        XCTAssertGreaterThan(handed, 0, "the stalled peers were written to")
        XCTAssertLessThan(handed, 8 * (8 << 20), "the stalled peers were handed \(handed) bytes")
        await client.shutdown()
        await server.shutdown()
    }
}
