import Dispatch
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Finds out why a server cannot be reached, the way a connection gets there: a name lookup, then a TCP connect.
/// libwebsockets reports a failed connect only as "Unable to connect", which does not tell a stopped server from a
/// mistyped host; a client command that gives up says which it was.
enum ConnectionProbe {
    /// How a refused connection's problem starts.
    static let refused = "connection refused"

    /// The problem in words ("no such host", "connection refused", …), or nil when a TCP connection opens (the
    /// server is there but does not answer). Gives up after `seconds` (the lookup or connect is still running).
    static func problem(host: String, port: Int, within seconds: Double) async -> String? {
        await withCheckedContinuation { continuation in
            let answer = Answer(continuation)
            // The lookup blocks and cannot be cancelled: it runs on its own thread and is abandoned when late.
            DispatchQueue.global().async { answer.give(probe(host: host, port: port, seconds: seconds)) }
            DispatchQueue.global().asyncAfter(deadline: .now() + seconds) {
                answer.give("no answer (neither a refusal nor a connection within \(seconds)s)")
            }
        }
    }

    /// Resumes the continuation with the first answer given.
    private final class Answer: Sendable {
        private let continuation: Mutex<CheckedContinuation<String?, Never>?>

        init(_ continuation: CheckedContinuation<String?, Never>) { self.continuation = Mutex(continuation) }

        func give(_ problem: String?) {
            continuation.withLock { $0.take() }?.resume(returning: problem)
        }
    }

    private static func probe(host: String, port: Int, seconds: Double) -> String? {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let lookup = getaddrinfo(host, String(port), &hints, &list)
        guard lookup == 0, let first = list else {
            // EAI_NONAME: the name does not exist; otherwise the look-up itself failed (no resolver answered, …).
            return lookup == EAI_NONAME
                ? "no such host '\(host)'"
                : "no such host '\(host)' (the look-up failed: \(String(cString: gai_strerror(lookup))))"
        }
        defer { freeaddrinfo(list) }
        let socket = Glibc.socket(
            first.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard socket >= 0 else { return "cannot open a socket: \(String(cString: strerror(errno)))" }
        defer { close(socket) }
        var error = connect(socket, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0 ? 0 : errno
        if error == EINPROGRESS {
            var descriptor = pollfd(fd: socket, events: Int16(POLLOUT), revents: 0)
            guard poll(&descriptor, 1, Int32(seconds * 1000)) == 1 else {
                return "no answer (TCP connect to \(host):\(port) timed out)"
            }
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(socket, SOL_SOCKET, SO_ERROR, &error, &length)
        }
        switch error {
        case 0: return nil
        case ECONNREFUSED: return "\(refused) (nothing listens on \(host):\(port))"
        default: return String(cString: strerror(error))
        }
    }
}
