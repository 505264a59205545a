import Foundation
import Prometheus
import Synchronization
import WebSocketTransport
import XCTest

/// Plain HTTP on the WebSocket port, over real sockets.
final class WebSocketServerHTTPTests: XCTestCase {
    func testHealthzMetricsStaticFilesAndNotFound() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tablecast-static-\(UUID())")
        try FileManager.default.createDirectory(
            at: directory.appendingPathComponent("js"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let page = "<!doctype html><title>Tablecast</title>"
        try page.write(to: directory.appendingPathComponent("index.html"), atomically: true, encoding: .utf8)
        try "export const x = 1;\n".write(
            to: directory.appendingPathComponent("js/app.js"), atomically: true, encoding: .utf8)
        let image = Data((0..<40_000).map { UInt8($0 % 251) })
        try image.write(to: directory.appendingPathComponent("big.png"))

        let registry = PrometheusCollectorRegistry()
        registry.makeCounter(
            descriptor: MetricNameDescriptor(
                metricName: "app_edits", unitName: "total", helpText: "an application metric")
        ).increment(by: Int64(3))
        let server = try WebSocketServer(
            configuration: .init(
                host: "127.0.0.1", port: 0, staticFilesDirectory: directory.path,
                metricsFactory: PrometheusMetricsFactory(registry: registry), metricsPage: { registry.emitToBuffer() }),
            onEvent: { _ in })

        let health = try HTTPGet(port: server.port, path: "/healthz")
        XCTAssertEqual(health.status, 200)
        XCTAssertEqual(health.headers["content-type"], "application/json")
        XCTAssertEqual(health.text, #"{"status":"ok","connections":0}"#)

        let metrics = try HTTPGet(port: server.port, path: "/metrics")
        XCTAssertEqual(metrics.status, 200)
        XCTAssertEqual(metrics.headers["content-type"], "text/plain; version=0.0.4; charset=utf-8")
        XCTAssertTrue(metrics.text.contains("# TYPE websocket_connections_open gauge"), metrics.text)
        XCTAssertTrue(metrics.text.contains("websocket_messages_sent_total 0"), metrics.text)
        XCTAssertTrue(metrics.text.contains("app_edits_total 3"), metrics.text)

        let index = try HTTPGet(port: server.port, path: "/")
        XCTAssertEqual(index.status, 200)
        XCTAssertEqual(index.headers["content-type"], "text/html; charset=utf-8")
        XCTAssertEqual(index.text, page)

        let script = try HTTPGet(port: server.port, path: "/js/app.js")
        XCTAssertEqual(script.headers["content-type"], "text/javascript; charset=utf-8")
        XCTAssertEqual(script.text, "export const x = 1;\n")

        // Larger than one write chunk: the body goes out over several writable callbacks.
        let png = try HTTPGet(port: server.port, path: "/big.png")
        XCTAssertEqual(png.headers["content-type"], "image/png")
        XCTAssertEqual(png.headers["content-length"], "40000")
        XCTAssertEqual(Data(png.body), image)

        for path in ["/missing.html", "/../etc/passwd", "/js/../../etc/passwd"] {
            XCTAssertEqual(try HTTPGet(port: server.port, path: path).status, 404, path)
        }
        await server.shutdown()
    }

    /// An API request the application leaves unanswered is answered by the transport after `answerTimeout` with
    /// the API's `timeoutReply`; the application is told the exchange ended, and its late answer goes nowhere. A
    /// request answered in time is not touched.
    func testAnAPIRequestLeftUnansweredGetsTheTimeoutReplyInTime() async throws {
        let server = Mutex<WebSocketServer?>(nil)
        let requests = Mutex<[WebSocketConnectionID]>([])
        let ended = Mutex<[WebSocketConnectionID]>([])
        var configuration = WebSocketServer.Configuration(host: "127.0.0.1", port: 0)
        configuration.api = HTTPAPI(
            prefix: "/v1/", maxBodyBytes: 1024, answerTimeout: .milliseconds(500),
            timeoutReply: { HTTPAPIReply(status: 503, body: Array("no answer to \($0.method) \($0.path)".utf8)) },
            onEvent: { event in
                switch event {
                case .request(let request):
                    requests.withLock { $0.append(request.id) }
                    if request.path == "/v1/fast" {
                        server.withLock { $0 }?.respond(request.id, HTTPAPIReply(status: 200, body: Array("ok".utf8)))
                    }
                case .ended(let id): ended.withLock { $0.append(id) }
                case .message: break
                }
            })
        let transport = try WebSocketServer(configuration: configuration, onEvent: { _ in })
        server.withLock { $0 = transport }

        let started = ContinuousClock.now
        let slow = try HTTPGet(port: transport.port, path: "/v1/slow")
        let waited = ContinuousClock.now - started
        XCTAssertEqual(slow.status, 503)
        XCTAssertEqual(slow.text, "no answer to GET /v1/slow")
        XCTAssertGreaterThanOrEqual(waited, .milliseconds(450))
        XCTAssertLessThan(waited, .seconds(3))
        let id = try XCTUnwrap(requests.withLock { $0.first })
        for _ in 0..<100 where !ended.withLock({ $0.contains(id) }) { try await Task.sleep(for: .milliseconds(10)) }
        XCTAssertEqual(ended.withLock { $0 }, [id])
        // The application's late answer is dropped: nothing is written to a later request.
        transport.respond(id, HTTPAPIReply(status: 200, body: Array("late".utf8)))

        let fast = try HTTPGet(port: transport.port, path: "/v1/fast")
        XCTAssertEqual(fast.status, 200)
        XCTAssertEqual(fast.text, "ok")
        try await Task.sleep(for: .milliseconds(700))
        XCTAssertEqual(requests.withLock { $0.count }, 2)
        XCTAssertEqual(ended.withLock { $0.count }, 2)
        await transport.shutdown()
    }

    /// An answer the reader does not take within `answerTimeout` of the request is cut off there: the connection is
    /// dropped, so a reader that stopped reading cannot hold it, and the answer's bytes, for good.
    func testAnAnswerTheReaderDoesNotTakeInTimeIsCutOff() async throws {
        let server = Mutex<WebSocketServer?>(nil)
        let ended = Mutex<[WebSocketConnectionID]>([])
        let body = [UInt8](repeating: UInt8(ascii: "x"), count: 8 << 20)
        var configuration = WebSocketServer.Configuration(host: "127.0.0.1", port: 0)
        configuration.api = HTTPAPI(
            prefix: "/v1/", maxBodyBytes: 1024, answerTimeout: .milliseconds(500),
            onEvent: { event in
                switch event {
                case .request(let request):
                    server.withLock { $0 }?.respond(request.id, HTTPAPIReply(status: 200, body: body))
                case .ended(let id): ended.withLock { $0.append(id) }
                case .message: break
                }
            })
        let transport = try WebSocketServer(configuration: configuration, onEvent: { _ in })
        server.withLock { $0 = transport }

        let reader = try RawSocket(port: transport.port, receiveBuffer: 4096)
        reader.write("GET /v1/big HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        for _ in 0..<300 where ended.withLock({ $0.isEmpty }) { try await Task.sleep(for: .milliseconds(10)) }
        XCTAssertEqual(ended.withLock { $0.count }, 1, "the exchange did not end")
        let received = reader.readToEnd()
        XCTAssertGreaterThan(received.count, 0)
        XCTAssertLessThan(received.count, body.count)
        await transport.shutdown()
    }

    /// A keep-alive connection is closed once it has waited `httpIdleTimeout` for its next request, not before, and
    /// one whose requests keep coming stays open past it. The transport keeps these waits itself (`IdleKeepAlives`),
    /// not in lws' sorted timer list.
    func testKeepAliveConnectionsCloseAfterWaitingTheIdleTimeoutButNotWhileInUse() async throws {
        let server = try WebSocketServer(
            configuration: .init(host: "127.0.0.1", port: 0, httpIdleTimeout: .seconds(1)), onEvent: { _ in })
        func get(_ socket: RawSocket) -> String {
            socket.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            var response: [UInt8] = []
            while !response.ends(with: Array("}".utf8)), case let chunk = socket.read(), !chunk.isEmpty {
                response += chunk
            }
            return String(decoding: response, as: UTF8.self)
        }

        let idle = try RawSocket(port: server.port)
        XCTAssertTrue(get(idle).hasPrefix("HTTP/1.1 200"))
        let answered = ContinuousClock.now
        XCTAssertEqual(idle.readToEnd(), [], "closed without a byte more")
        let waited = ContinuousClock.now - answered
        XCTAssertGreaterThanOrEqual(waited, .milliseconds(950), "closed before the timeout")
        XCTAssertLessThan(waited, .seconds(3), "not closed in time")

        let busy = try RawSocket(port: server.port)
        let start = ContinuousClock.now
        while ContinuousClock.now - start < .seconds(2) {
            XCTAssertTrue(get(busy).hasPrefix("HTTP/1.1 200"), "a request 0.4 s after the last one")
            try await Task.sleep(for: .milliseconds(400))
        }
        XCTAssertEqual(busy.readToEnd(), [], "closed once it waited in turn")
        await server.shutdown()
    }

    func testUpgradeBeyondMaxConnectionsIsRefusedWith503() async throws {
        let events = EventRecorder()
        let server = try WebSocketServer(
            configuration: .init(host: "127.0.0.1", port: 0, maxConnections: 2), onEvent: events.handler)
        let first = try RawSocket(port: server.port)
        let second = try RawSocket(port: server.port)
        XCTAssertEqual(first.upgrade(), "HTTP/1.1 101 Switching Protocols")
        XCTAssertEqual(second.upgrade(), "HTTP/1.1 101 Switching Protocols")
        let third = try RawSocket(port: server.port)
        XCTAssertTrue(third.upgrade().hasSuffix(" 503 Service Unavailable"))
        try await events.wait("two opens") { $0.opened.count == 2 }
        XCTAssertEqual(events.opened.count, 2)
        await server.shutdown()
    }
}
