import CLibWebSockets
import Dispatch

/// HTTP connections kept alive between requests (server role, service thread).
///
/// When a response is complete, lws (`lws_http_transaction_completed`) gives the connection its keep-alive timeout
/// in its list of timers sorted by time, where a new one goes behind every other: with N connections idle, each
/// response walked N entries, and with 8,000 idle a connection making two requests cost the server 210 µs of CPU
/// instead of 60. The loop takes that timeout out again at once and keeps the wait in ``IdleKeepAlives``, judged by
/// its once-a-second sweep, so lws' list holds only short-lived timers (handshakes, closes) and a response costs
/// the same however many wait.
extension ServiceLoop {
    /// The response on `wsi` is complete and lws keeps the connection for its next request. Also takes out the
    /// timeout lws gives a pipelined request's header table, which is as long: the wait covers it.
    func keepAlive(_ wsi: OpaquePointer) {
        lws_set_timeout(wsi, NO_PENDING_TIMEOUT, 0)
        idleKeepAlives.waiting(Self.key(wsi), at: DispatchTime.now().uptimeNanoseconds)
    }

    /// A request's headers arrived on `wsi`, or it is gone: it no longer waits.
    func stopWaiting(_ wsi: OpaquePointer) {
        idleKeepAlives.stopped(Self.key(wsi))
    }

    /// Closes the connections that have waited the timeout (at the sweep after, within a second). A request whose
    /// headers were still arriving then is cut off, as at any server's keep-alive timeout.
    func closeIdleKeepAlives(at now: UInt64) {
        for key in idleKeepAlives.removeExpired(at: now) {
            if let wsi = OpaquePointer(bitPattern: key) { killSoon(wsi, PENDING_TIMEOUT_HTTP_KEEPALIVE_IDLE) }
        }
    }
}
