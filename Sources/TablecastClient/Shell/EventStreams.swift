import Synchronization

/// The ``TablecastClient/events()`` streams open on a client; all end when it closes.
final class EventStreams: Sendable {
    typealias Event = TablecastClient.Event

    private struct State {
        var streams: [Int: AsyncStream<Event>.Continuation] = [:]
        var nextKey = 0
        var finished = false
    }

    private let state = Mutex(State())

    /// A stream of every event yielded from now on; an ended one once ``finish()`` was called.
    func makeStream() -> AsyncStream<Event> {
        let (stream, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .unbounded)
        let key = state.withLock { state -> Int? in
            if state.finished { return nil }
            state.nextKey += 1
            state.streams[state.nextKey] = continuation
            return state.nextKey
        }
        guard let key else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.streams.removeValue(forKey: key) }
        }
        return stream
    }

    func yield(_ event: Event) {
        for stream in state.withLock({ Array($0.streams.values) }) { stream.yield(event) }
    }

    /// Ends every stream, and those made later at once.
    func finish() {
        let streams = state.withLock { state in
            state.finished = true
            defer { state.streams = [:] }
            return Array(state.streams.values)
        }
        for stream in streams { stream.finish() }
    }
}
