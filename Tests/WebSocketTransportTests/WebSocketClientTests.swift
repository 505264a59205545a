import TablecastTesting
import WebSocketTransport
import XCTest

final class WebSocketClientTests: XCTestCase {
    /// A client's shutdown ends with the close handshake, not on the loop's next tick: lws closes a connection
    /// asynchronously, and its timer is armed only when it services an event, so without a wake each close waited
    /// up to 0.1 s (these 20 shutdowns took 0.7–1.3 s; now about 12 ms).
    func testShutdownAfterTheCloseHandshakeDoesNotWaitForATick() async throws {
        let serverEvents = EventRecorder()
        let server = try WebSocketServer(
            configuration: .init(host: "127.0.0.1", port: 0), onEvent: serverEvents.handler)
        var shuttingDown = Duration.zero
        for round in 1...20 {
            let events = EventRecorder()
            let client = try WebSocketClient(onEvent: events.handler)
            let id = client.connect(WebSocketConnectRequest(host: "127.0.0.1", port: server.port))
            try await events.wait("open") { $0.opened.count == 1 }
            let start = ContinuousClock.now
            await client.shutdown()
            shuttingDown += ContinuousClock.now - start
            XCTAssertEqual(events.closes(on: id).first?.code, .normalClosure)
            try await serverEvents.wait("the server's close \(round)") { $0.closes().count == round }
        }
        XCTAssertLessThan(shuttingDown, .milliseconds(300), "20 shutdowns")
        await server.shutdown()
    }

    /// Our client against our server: text and binary echo, open info, and both sides' close events.
    func testEchoAgainstServer() async throws {
        let serverEvents = EventRecorder()
        let box = ServerBox()
        let server = try WebSocketServer(
            configuration: .init(host: "127.0.0.1", port: 0, subprotocols: ["tablecast.v1"])
        ) { event in
            serverEvents.handler(event)
            if case .message(let id, let message) = event {
                box.server?.send(WebSocketMessage(kind: message.kind, bytes: message.bytes), to: id)
            }
        }
        box.server = server
        let clientEvents = EventRecorder()
        let client = try WebSocketClient(onEvent: clientEvents.handler)
        let id = client.connect(
            WebSocketConnectRequest(
                host: "127.0.0.1", port: server.port, path: "/tables/7?since=3&x=y", subprotocol: "tablecast.v1",
                origin: "http://example.test", headers: ["X-Tablecast-Test": "yes"]))
        client.send(WebSocketMessage(text: "hello, tables"), to: id)
        client.send(WebSocketMessage(bytes: [0, 1, 2, 255]), to: id)
        try await clientEvents.wait("two echoes") { $0.messages(on: id).count == 2 }
        XCTAssertEqual(clientEvents.messages(on: id).map(\.text).first, "hello, tables")
        XCTAssertEqual(
            clientEvents.messages(on: id).last, WebSocketInboundMessage(kind: .binary, bytes: [0, 1, 2, 255]))

        let info = try XCTUnwrap(serverEvents.opened.first)
        XCTAssertEqual(info.path, "/tables/7")
        XCTAssertEqual(info.query, "since=3&x=y")
        XCTAssertEqual(info.origin, "http://example.test")
        XCTAssertEqual(info.subprotocol, "tablecast.v1")
        XCTAssertEqual(info.remoteAddress, "127.0.0.1")
        XCTAssertEqual(clientEvents.opened.first?.subprotocol, "tablecast.v1")

        client.close(id, code: .normalClosure, reason: "done")
        try await serverEvents.wait("server close") { !$0.closes().isEmpty }
        try await clientEvents.wait("client close") { !$0.closes().isEmpty }
        XCTAssertEqual(serverEvents.closes().first, WebSocketCloseFrame(code: .normalClosure, reason: "done"))
        XCTAssertEqual(clientEvents.closes().first?.code, .normalClosure)
        await client.shutdown()
        await server.shutdown()
    }

    /// A connection that cannot connect reports only `closed` with 1006.
    func testFailedConnectReportsAbnormalClose() async throws {
        let events = EventRecorder()
        let client = try WebSocketClient(onEvent: events.handler)
        let port = try FreePort.find()
        let id = client.connect(WebSocketConnectRequest(host: "127.0.0.1", port: port))
        try await events.wait("close") { !$0.closes(on: id).isEmpty }
        XCTAssertEqual(events.closes(on: id).first?.code, .abnormalClosure)
        XCTAssertTrue(events.opened.isEmpty)
        await client.shutdown()
    }

    /// What the client puts on the wire: path with query, subprotocol, Origin and extra headers.
    func testHandshakeCarriesSubprotocolOriginAndHeaders() async throws {
        let listener = try RawListener()
        let client = try WebSocketClient { _ in }
        client.connect(
            WebSocketConnectRequest(
                host: "127.0.0.1", port: listener.port, path: "/tables/9?since=1", subprotocol: "tablecast.v1",
                origin: "http://example.test", headers: ["Authorization": "Bearer t0ken", "X-Trace": "abc"]))
        let head = try XCTUnwrap(listener.acceptRequestHead())
        let lines = Set(head.components(separatedBy: "\r\n").map { $0.lowercased() })
        XCTAssertTrue(head.hasPrefix("GET /tables/9?since=1 HTTP/1.1\r\n"), head)
        for expected in [
            "sec-websocket-protocol: tablecast.v1", "origin: http://example.test",
            "authorization: bearer t0ken", "x-trace: abc", "upgrade: websocket",
        ] {
            XCTAssertTrue(lines.contains(expected), "missing \(expected) in \(head)")
        }
        await client.shutdown()
    }
}

extension WebSocketClientTests {
    /// A message larger than the client's `maxMessageSize` closes the client's connection with 1009; nothing else.
    func testOversizedMessageToTheClientClosesWith1009() async throws {
        let serverEvents = EventRecorder()
        let server = try WebSocketServer(
            configuration: .init(host: "127.0.0.1", port: 0), onEvent: serverEvents.handler)
        let clientEvents = EventRecorder()
        let client = try WebSocketClient(configuration: .init(maxMessageSize: 1 << 20), onEvent: clientEvents.handler)
        let id = client.connect(WebSocketConnectRequest(host: "127.0.0.1", port: server.port))
        try await serverEvents.wait("open") { $0.opened.count == 1 }
        let connection = try XCTUnwrap(serverEvents.opened.first?.id)
        server.send(WebSocketMessage(text: String(repeating: "x", count: 1_500_000)), to: connection)
        try await clientEvents.wait("close") { !$0.closes(on: id).isEmpty }
        XCTAssertEqual(clientEvents.closes(on: id).first?.code, .messageTooBig)
        XCTAssertTrue(clientEvents.messages(on: id).isEmpty)
        await client.shutdown()
        await server.shutdown()
    }
}

extension WebSocketClientTests {
    /// A request's local address is the source address the server sees; an abort ends the connection without a
    /// close frame: the server reports 1006 (no frame), as for a failed network, and the client reports it lost.
    func testLocalAddressIsTheSourceAndAbortSendsNoCloseFrame() async throws {
        let serverEvents = EventRecorder()
        let server = try WebSocketServer(
            configuration: .init(host: "127.0.0.1", port: 0), onEvent: serverEvents.handler)
        let clientEvents = EventRecorder()
        let client = try WebSocketClient(onEvent: clientEvents.handler)
        var request = WebSocketConnectRequest(host: "127.0.0.1", port: server.port)
        request.localAddress = "127.0.0.3"
        let id = client.connect(request)
        try await clientEvents.wait("open") { $0.opened.count == 1 }
        try await serverEvents.wait("open") { $0.opened.count == 1 }
        XCTAssertEqual(serverEvents.opened.first?.remoteAddress, "127.0.0.3")

        client.abort(id)
        try await serverEvents.wait("server close") { !$0.closes().isEmpty }
        try await clientEvents.wait("client close") { !$0.closes(on: id).isEmpty }
        XCTAssertEqual(serverEvents.closes().first?.code, .abnormalClosure)
        XCTAssertEqual(clientEvents.closes(on: id).first?.code, .abnormalClosure)
        await client.shutdown()
        await server.shutdown()
    }
}
