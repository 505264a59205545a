import CLibWebSockets
import Dispatch
import Foundation

/// The server role's guard against handshake floods (service thread only): connections from an address that
/// already has `maxHandshakesPerAddress` stalled handshakes (see `HandshakeGate`) are closed as soon as they are
/// accepted, before lws gives them a header table; stalled ones are dropped by lws after the handshake timeout.
extension ServiceLoop {
    /// `LWS_CALLBACK_FILTER_NETWORK_CONNECTION`: 0 to go on, -1 to hang up at once.
    func filterNetworkConnection(_ arguments: UnsafeMutableRawPointer?) -> Int32 {
        if isDraining { return -1 }
        guard let arguments else { return 0 }
        let args = arguments.assumingMemoryBound(to: lws_filter_network_conn_args.self)
        let address = withUnsafePointer(to: &args.pointee.cli_addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Self.numericHost($0, args.pointee.clilen) }
        }
        guard handshakeGate.admits(address, now: DispatchTime.now().uptimeNanoseconds) else {
            metrics?.handshakesRefused.increment()
            return -1
        }
        return 0
    }

    /// `LWS_CALLBACK_SERVER_NEW_CLIENT_INSTANTIATED`: an accepted connection starts its handshake.
    func handshakeBegan(_ wsi: OpaquePointer) {
        guard handshakeGate.maxPerAddress != nil else { return }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let address = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                getpeername(lws_get_socket_fd(wsi), $0, &length) == 0 ? Self.numericHost($0, length) : nil
            }
        }
        if let address {
            handshakeGate.began(Self.key(wsi), from: address, at: DispatchTime.now().uptimeNanoseconds)
        }
    }

    /// The connection became a WebSocket connection, or was destroyed.
    func handshakeEnded(_ wsi: OpaquePointer) {
        handshakeGate.ended(Self.key(wsi))
    }

    /// The numeric address of a peer, IPv4-mapped IPv6 addresses (the listener is dual-stack) as plain IPv4.
    static func numericHost(_ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> String {
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        guard getnameinfo(address, length, &host, socklen_t(host.count), nil, 0, NI_NUMERICHOST) == 0 else { return "" }
        return plainIPv4(String(decoding: host.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }

    static func plainIPv4(_ text: String) -> String {
        text.hasPrefix("::ffff:") && text.contains(".") ? String(text.dropFirst(7)) : text
    }
}
