import Foundation

/// A blocking TCP client on 127.0.0.1 for hand-written HTTP requests and WebSocket frames.
final class RawSocket {
    private let fd: Int32

    init(port: Int, receiveBuffer: Int? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        if var size = receiveBuffer.map(Int32.init) {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            close(fd)
            throw POSIXError(.ECONNREFUSED)
        }
    }

    /// Wraps a connected socket (see `RawListener.acceptWebSocket`).
    init(descriptor: Int32) {
        fd = descriptor
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    func write(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { return }
            offset += n
        }
    }

    func write(_ text: String) { write(Array(text.utf8)) }

    /// Sends FIN: the peer reads the end of the stream, and this side can still read.
    func shutdownWriting() { shutdown(fd, Int32(SHUT_WR)) }

    /// Up to `max` bytes; empty at end of stream or timeout.
    func read(max: Int = 65_536) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: max)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, max, 0) }
        return n > 0 ? Array(buffer[..<n]) : []
    }

    /// Everything until the peer closes.
    func readToEnd() -> [UInt8] {
        var all: [UInt8] = []
        while case let chunk = read(), !chunk.isEmpty { all += chunk }
        return all
    }

    /// Exactly `count` bytes, or fewer if the stream ends.
    func read(exactly count: Int) -> [UInt8] {
        var all: [UInt8] = []
        while all.count < count, case let chunk = read(max: count - all.count), !chunk.isEmpty { all += chunk }
        return all
    }

    /// Sends a WebSocket upgrade request and reads the response headers; returns the status line.
    func upgrade(path: String = "/") -> String {
        upgradeResponse(path: path).first ?? ""
    }

    /// Sends a WebSocket upgrade request and returns the response's status line and header lines.
    func upgradeResponse(path: String = "/", version: String = "13") -> [String] {
        write(
            "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: \(version)\r\n\r\n")
        var headers: [UInt8] = []
        while !headers.ends(with: Array("\r\n\r\n".utf8)) {
            let byte = read(exactly: 1)
            guard !byte.isEmpty else { break }
            headers += byte
        }
        return String(decoding: headers, as: UTF8.self).components(separatedBy: "\r\n").filter { !$0.isEmpty }
    }

    /// A client frame as the RFC requires: masked (with a fixed key, which is allowed).
    static func frame(opcode: UInt8, fin: Bool, payload: [UInt8]) -> [UInt8] {
        frame(opcode: opcode, fin: fin, payload: payload, mask: [0x12, 0x34, 0x56, 0x78])
    }

    /// A frame with the shortest length encoding, masked with `mask` when one is given.
    static func frame(opcode: UInt8, fin: Bool, payload: [UInt8], mask: [UInt8]?) -> [UInt8] {
        var frame: [UInt8] = [(fin ? 0x80 : 0) | opcode]
        let maskBit: UInt8 = mask == nil ? 0 : 0x80
        switch payload.count {
        case ..<126: frame.append(maskBit | UInt8(payload.count))
        case ..<65_536: frame += [maskBit | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        default: frame += [maskBit | 127] + (0..<8).reversed().map { UInt8((payload.count >> ($0 * 8)) & 0xFF) }
        }
        guard let mask else { return frame + payload }
        return frame + mask + payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
    }

    /// Reads one unmasked server frame: (opcode, payload).
    func readFrame() -> (opcode: UInt8, payload: [UInt8])? {
        readFrame(masked: false).map { ($0.opcode, $0.payload) }
    }

    /// Reads one frame, and unmasks its payload when `masked`: nil if the stream ended, or if a frame that should be
    /// masked was not. `key` is the masking key (empty when not masked).
    private func readFrame(masked: Bool) -> (opcode: UInt8, payload: [UInt8], key: [UInt8])? {
        let head = read(exactly: 2)
        guard head.count == 2, !masked || head[1] & 0x80 != 0 else { return nil }
        var length = Int(head[1] & 0x7F)
        if length == 126 {
            length = read(exactly: 2).reduce(0) { $0 << 8 | Int($1) }
        } else if length == 127 {
            length = read(exactly: 8).reduce(0) { $0 << 8 | Int($1) }
        }
        guard masked else { return (head[0] & 0x0F, read(exactly: length), []) }
        let mask = read(exactly: 4)
        let payload = read(exactly: length)
        guard mask.count == 4, payload.count == length else { return nil }
        return (head[0] & 0x0F, payload.enumerated().map { $1 ^ mask[$0 & 3] }, mask)
    }

    /// A server frame: unmasked.
    static func serverFrame(opcode: UInt8, fin: Bool = true, payload: [UInt8]) -> [UInt8] {
        frame(opcode: opcode, fin: fin, payload: payload, mask: nil)
    }

    /// Reads one client frame: its opcode, unmasked payload and masking key, nil if it was not masked or the stream
    /// ended.
    func readMaskedFrame() -> (opcode: UInt8, payload: [UInt8], key: [UInt8])? {
        readFrame(masked: true)
    }

    /// Reads frames until a close frame and returns its code and reason.
    func readCloseFrame() -> (code: UInt16, reason: String)? {
        while let frame = readFrame() {
            guard frame.opcode == 0x8 else { continue }
            guard frame.payload.count >= 2 else { return (1005, "") }
            return (
                UInt16(frame.payload[0]) << 8 | UInt16(frame.payload[1]),
                String(decoding: frame.payload.dropFirst(2), as: UTF8.self)
            )
        }
        return nil
    }
}

extension Array where Element == UInt8 {
    func ends(with suffix: [UInt8]) -> Bool {
        count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix
    }
}
