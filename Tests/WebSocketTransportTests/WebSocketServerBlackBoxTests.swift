import Foundation
import WebSocketTransport
import XCTest

/// Drives the server with an independent client: Python's `websockets` (installed by .ci/install), so the layer
/// is not only tested against its own client.
final class WebSocketServerBlackBoxTests: XCTestCase {
    func testPythonWebsocketsClient() async throws {
        let events = EventRecorder()
        let box = ServerBox()
        let server = try WebSocketServer(
            configuration: .init(host: "127.0.0.1", port: 0, subprotocols: ["tablecast.v1"], maxMessageSize: 100_000)
        ) { event in
            events.handler(event)
            if case .message(let id, let message) = event {
                box.server?.send(WebSocketMessage(kind: message.kind, bytes: message.bytes), to: id)
            }
        }
        box.server = server

        let tests = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        let script = tests.appendingPathComponent("BlackBox/websocket_client_check.py")
        // The tests' Python packages (websockets) are in the checkout's .venv, which .ci/install makes.
        let venv = tests.deletingLastPathComponent().appendingPathComponent(".venv/bin/python")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            FileManager.default.isExecutableFile(atPath: venv.path) ? venv.path : "python3", script.path,
            String(server.port),
        ]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0, text)
        XCTAssertTrue(text.contains("black-box: all checks passed"), text)

        try await events.wait("close") { !$0.closes().isEmpty }
        let info = try XCTUnwrap(events.opened.first)
        XCTAssertEqual(info.path, "/blackbox")
        XCTAssertEqual(info.query, "client=python")
        XCTAssertEqual(info.origin, "http://blackbox.test")
        XCTAssertEqual(info.subprotocol, "tablecast.v1")
        XCTAssertEqual(events.messages().map(\.text).prefix(1), ["héllo, tables"])
        XCTAssertEqual(events.closes().first?.code, .messageTooBig)
        await server.shutdown()
    }
}
