import CLibWebSockets
import Logging
import Synchronization

/// Routes libwebsockets' process-wide log output into swift-log.
///
/// lws' logging entry point is variadic and cannot be called from Swift, but it accepts one C emit function for
/// the whole process. The first server or client to start installs it; lines go to that one's logger.
enum LibWebSocketsLog {
    private static let logger = Mutex<Logger?>(nil)

    static func install(_ logger: Logger) {
        let first = Self.logger.withLock { current in
            defer { if current == nil { current = logger } }
            return current == nil
        }
        guard first else { return }
        // lws' notices (vhost created, listening) are routine: they become debug lines, so lws formats them only
        // for a logger that shows debug lines. Debian's libev event loop writes one notice each time a socket's
        // events change (twice per message sent): formatted and then dropped, they were 45 % of the service
        // thread's instructions at fan-out.
        let notices = logger.logLevel <= .debug ? LLL_NOTICE : 0
        lws_set_log_level(LLL_ERR | LLL_WARN | notices, emitLibWebSocketsLogLine)
    }

    fileprivate static func emit(level: Int32, line: String) {
        guard let logger = logger.withLock({ $0 }) else { return }
        switch level {
        // A certificate that did not verify: the connection's close (1015) reports it, with the reason.
        case LLL_ERR where line.hasPrefix("SSL error:"): logger.debug("\(line)")
        case LLL_ERR: logger.error("\(line)")
        case LLL_WARN: logger.warning("\(line)")
        case LLL_NOTICE: logger.debug("\(line)")
        default: logger.trace("\(line)")
        }
    }
}

/// The C-convention emit function handed to `lws_set_log_level`; global and nonisolated because lws calls it
/// from its service thread.
private func emitLibWebSocketsLogLine(level: Int32, line: UnsafePointer<CChar>?) {
    guard let line else { return }
    var text = String(cString: line)
    while text.last?.isNewline == true { text.removeLast() }
    LibWebSocketsLog.emit(level: level, line: text)
}
