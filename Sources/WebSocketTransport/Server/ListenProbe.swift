#if canImport(Glibc)
    import Glibc
#endif

/// Tries the listening address before libwebsockets does, to say in one line why it cannot be used ("port 9350 is
/// already in use"): lws only logs its bind failure and reports a context it could not create.
enum ListenProbe {
    /// Throws `listenFailed` naming the problem when `host:port` cannot be bound; returns when it can (or when the
    /// probe cannot tell, leaving the verdict to lws).
    static func check(host: String?, port: Int) throws {
        guard port != 0 else { return }
        var hints = addrinfo()
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var found: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &found) == 0, let first = found else {
            throw WebSocketTransportError.listenFailed.with(message: "cannot listen on \(host ?? "*"): no such address")
        }
        defer { freeaddrinfo(found) }
        let fd = socket(first.pointee.ai_family, first.pointee.ai_socktype, first.pointee.ai_protocol)
        guard fd >= 0 else { return }
        defer { close(fd) }
        // As lws does, so that connections in TIME_WAIT from a previous run do not count as "in use".
        var on: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
        guard bind(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) != 0 else { return }
        let message =
            switch errno {
            case EADDRINUSE: "port \(port) is already in use"
            case EACCES: "no permission to listen on port \(port) (ports below 1024 need privileges)"
            case EADDRNOTAVAIL: "\(host ?? "*") is not an address of this machine"
            case let error: "cannot listen on \(host ?? "*"):\(port): \(String(cString: strerror(error)))"
            }
        throw WebSocketTransportError.listenFailed.with(message: message)
    }
}
