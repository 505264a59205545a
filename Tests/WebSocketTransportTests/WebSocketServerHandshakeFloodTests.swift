import Foundation
import WebSocketTransport
import XCTest

/// Slowloris: many TCP connections that send half an HTTP request and stall must not keep others out.
final class WebSocketServerHandshakeFloodTests: XCTestCase {
    private static let partialRequest = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"

    override func setUp() {
        super.setUp()
        // 2,000 stalled sockets here and their 2,000 accepted ends in the server, in this one process.
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        limit.rlim_cur = limit.rlim_max
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }

    /// 2,000 stalled requests from 20 addresses (under the per-address cap): a normal client still gets its
    /// upgrade answered within 2 s, and the stalled connections are closed by the server after the handshake
    /// timeout.
    func testStalledHandshakesDoNotKeepANormalClientOut() async throws {
        let server = try WebSocketServer(
            configuration: .init(host: "127.0.0.1", port: 0, handshakeTimeout: .seconds(3)), onEvent: { _ in })
        var stalled: [StalledSocket] = []
        for index in 0..<2000 {
            let socket = try StalledSocket(from: "127.0.1.\(index % 20 + 1)", port: server.port)
            socket.send(Self.partialRequest)
            stalled.append(socket)
        }
        let client = try StalledSocket(from: "127.0.0.1", port: server.port, receiveTimeoutSeconds: 2)
        XCTAssertEqual(client.upgrade(), "HTTP/1.1 101 Switching Protocols")

        // The server hangs up on them: end of stream, not our 10 s receive timeout.
        for socket in [stalled[0], stalled[999], stalled[1999]] {
            XCTAssertTrue(socket.waitForClose(timeoutSeconds: 10))
        }
        await server.shutdown()
    }

    /// Past `maxHandshakesPerAddress` stalled handshakes, one more connection from that address is closed at once,
    /// while other addresses connect; completed handshakes and closed connections free their place.
    func testStalledHandshakesPerAddressAreCapped() async throws {
        let server = try WebSocketServer(
            configuration: .init(
                host: "127.0.0.1", port: 0, handshakeTimeout: .seconds(30), maxHandshakesPerAddress: 8),
            onEvent: { _ in })
        var stalled = try (0..<8).map { _ in try StalledSocket(from: "127.0.0.3", port: server.port) }
        for socket in stalled { socket.send(Self.partialRequest) }
        // Once they have stalled (a second), a 9th is hung up on at once, long before the handshake timeout.
        XCTAssertTrue(try refusesSoon(from: "127.0.0.3", port: server.port))
        XCTAssertEqual(try RawSocket(port: server.port).upgrade(), "HTTP/1.1 101 Switching Protocols")

        // Completed handshakes free their places: after 8 upgrades from one address, a 9th still gets in.
        let upgraded = try (0..<8).map { _ in try StalledSocket(from: "127.0.0.2", port: server.port) }
        for socket in upgraded { XCTAssertEqual(socket.upgrade(), "HTTP/1.1 101 Switching Protocols") }
        XCTAssertEqual(
            try StalledSocket(from: "127.0.0.2", port: server.port).upgrade(), "HTTP/1.1 101 Switching Protocols")

        // Closed connections free theirs. The server sees the closes a moment later: retry until it has.
        stalled.removeAll()
        var status = ""
        for _ in 0..<50 where status.isEmpty {
            status = try StalledSocket(from: "127.0.0.3", port: server.port).upgrade()
            if status.isEmpty { usleep(100_000) }
        }
        XCTAssertEqual(status, "HTTP/1.1 101 Switching Protocols")
        await server.shutdown()
    }

    /// Handshakes that have not stalled do not count: 300 connections opened at once from one address, against a
    /// cap of 8, all complete their upgrade.
    func testQuickHandshakesFromOneAddressAreNotCapped() async throws {
        let server = try WebSocketServer(
            configuration: .init(host: "127.0.0.1", port: 0, maxHandshakesPerAddress: 8), onEvent: { _ in })
        let sockets = try (0..<300).map { _ in try StalledSocket(from: "127.0.0.4", port: server.port) }
        for socket in sockets { XCTAssertEqual(socket.upgrade(), "HTTP/1.1 101 Switching Protocols") }
        await server.shutdown()
    }

    /// Opens connections from `source` until the server hangs up on one at once, for up to 5 s; each one it keeps
    /// is closed again, so that only the stalled ones count.
    private func refusesSoon(from source: String, port: Int) throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < deadline {
            if try StalledSocket(from: source, port: port, receiveTimeoutSeconds: 1).waitForClose(timeoutSeconds: 1) {
                return true
            }
        }
        return false
    }
}

/// A blocking TCP client bound to a chosen loopback source address (Linux routes all of 127/8 to lo).
private final class StalledSocket {
    private let fd: Int32

    init(from source: String, port: Int, receiveTimeoutSeconds: Int = 10) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EMFILE) }
        var timeout = timeval(tv_sec: receiveTimeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        local.sin_addr.s_addr = inet_addr(source)
        var remote = sockaddr_in()
        remote.sin_family = sa_family_t(AF_INET)
        remote.sin_port = in_port_t(UInt16(port).bigEndian)
        remote.sin_addr.s_addr = inet_addr("127.0.0.1")
        let ok =
            Self.withAddress(&local) { bind(fd, $0, $1) == 0 } && Self.withAddress(&remote) { connect(fd, $0, $1) == 0 }
        guard ok else {
            close(fd)
            throw POSIXError(.ECONNREFUSED)
        }
    }

    deinit { close(fd) }

    private static func withAddress(_ address: inout sockaddr_in, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Bool)
        -> Bool
    {
        withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
    }

    func send(_ text: String) {
        _ = Array(text.utf8).withUnsafeBytes { Foundation.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Whether the peer closed the connection (end of stream or reset) before the receive timeout.
    func waitForClose(timeoutSeconds: Int) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let deadline = Date().addingTimeInterval(TimeInterval(timeoutSeconds))
        while Date() < deadline {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n == 0 || (n < 0 && errno == ECONNRESET) { return true }
            if n < 0 { return false }
        }
        return false
    }

    /// A complete upgrade request; the response's status line, empty if the connection was closed.
    func upgrade() -> String {
        send(
            "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
        var response: [UInt8] = []
        var byte: UInt8 = 0
        while !response.ends(with: Array("\r\n".utf8)), recv(fd, &byte, 1, 0) == 1 { response.append(byte) }
        return String(decoding: response, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
