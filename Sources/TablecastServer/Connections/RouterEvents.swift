import Synchronization

/// The router's mailbox: events from any thread (the transport's, request tasks', the server's), taken by the
/// router's one task in order, everything queued at a time.
///
/// An `AsyncStream` did this before. Its code is generic and not specialized for our element type, so every yield
/// and every `next()` looked type metadata up at run time: about 10,000 instructions per message, 6 % of what a
/// durable intent costs the server. A busy router now takes its events in batches, one lock each.
final class RouterEvents: Sendable {
    private struct State: ~Copyable {
        var events: [RouterEvent] = []
        /// The router, waiting for the next event.
        var waiter: UnsafeContinuation<Void, Never>?
        var finished = false
    }

    private let state = Mutex(State())

    init() {}

    /// Queues `event` for the router; false, and the event dropped, once ``finish()`` was called.
    @discardableResult
    func yield(_ event: RouterEvent) -> Bool {
        let (accepted, waiter) = state.withLock { state -> (Bool, UnsafeContinuation<Void, Never>?) in
            guard !state.finished else { return (false, nil) }
            state.events.append(event)
            defer { state.waiter = nil }
            return (true, state.waiter)
        }
        waiter?.resume()
        return accepted
    }

    /// No event is taken from now on; the router still gets those already queued, then ``next()`` returns nil.
    func finish() {
        let waiter = state.withLock { state -> UnsafeContinuation<Void, Never>? in
            state.finished = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Every event queued, in order, waiting until there is one; nil once finished and all were taken. One
    /// consumer only.
    func next() async -> [RouterEvent]? {
        while true {
            let (taken, finished) = state.withLock { state -> ([RouterEvent], Bool) in
                defer { state.events = [] }
                return (state.events, state.finished)
            }
            if !taken.isEmpty { return taken }
            if finished { return nil }
            await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
                let waits = state.withLock { state -> Bool in
                    guard state.events.isEmpty, !state.finished else { return false }
                    state.waiter = continuation
                    return true
                }
                if !waits { continuation.resume() }
            }
        }
    }
}
