import CLibCrypto
import Foundation

/// A TCP listener on 127.0.0.1 that accepts one connection and returns its request head, to see exactly what
/// a client sent, or plays a WebSocket server byte by byte.
final class RawListener {
    private let fd: Int32
    let port: Int

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.fd = fd
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard ok, listen(fd, 4) == 0 else {
            close(fd)
            throw POSIXError(.EADDRINUSE)
        }
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(fd) }

    /// Accepts one connection (waiting up to 10 s) and reads until the blank line that ends the request head.
    func acceptRequestHead() -> String? {
        guard let connection = accept() else { return nil }
        defer { close(connection) }
        return Self.readHead(connection)
    }

    /// Accepts one WebSocket client, answers its upgrade with a 101 followed, in the same send, by `then` (frames a
    /// server may write right behind its response), and returns the connection.
    func acceptWebSocket(then: [UInt8] = []) -> RawSocket? {
        guard let connection = accept() else { return nil }
        let socket = RawSocket(descriptor: connection)
        guard let head = Self.readHead(connection),
            let key = head.split(separator: "\r\n").first(where: { $0.lowercased().hasPrefix("sec-websocket-key:") })
        else { return nil }
        let accept = Self.acceptValue(key.dropFirst("sec-websocket-key:".count).trimmingCharacters(in: .whitespaces))
        socket.write(
            Array(
                ("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    + "Sec-WebSocket-Accept: \(accept)\r\n\r\n").utf8) + then)
        return socket
    }

    /// RFC 6455 §4.2.2: base64 of the SHA-1 of the key and the protocol's GUID.
    private static func acceptValue(_ key: String) -> String {
        let input = Array((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").utf8)
        var digest = [UInt8](repeating: 0, count: Int(SHA_DIGEST_LENGTH))
        SHA1(input, input.count, &digest)
        return Data(digest).base64EncodedString()
    }

    private func accept() -> Int32? {
        var pollfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&pollfd, 1, 10_000) == 1 else { return nil }
        let connection = Foundation.accept(fd, nil, nil)
        guard connection >= 0 else { return nil }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return connection
    }

    private static func readHead(_ connection: Int32) -> String? {
        var head: [UInt8] = []
        var byte: UInt8 = 0
        while !head.ends(with: Array("\r\n\r\n".utf8)), recv(connection, &byte, 1, 0) == 1 {
            head.append(byte)
        }
        return head.isEmpty ? nil : String(decoding: head, as: UTF8.self)
    }
}
