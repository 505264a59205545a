import TableModel
import TablecastProtocol
import WebSocketTransport

/// Transport events, turned into the machine's events on the client's queue.
extension TablecastClient {
    /// Called on the transport's thread: hands the event to the client's queue (or handles it right here, see
    /// ``Configuration/handlesOnTransportThread``).
    func receive(_ event: WebSocketEvent, on socket: Machine.SocketID) {
        // A client without replicas scans updates right here (a cheap walk of the top level, no allocation) rather
        // than hopping to its queue: thousands of counting connections would otherwise cost a dispatch each.
        if !configuration.keepsReplicas, case .message(_, let message) = event,
            let update = UpdateScanner.scan(message.bytes)
        {
            if let seen = state.withLock({ $0.machine.updateSeen(update, on: socket) }) { emit(seen) }
            return
        }
        if configuration.handlesOnTransportThread { return handle(event, on: socket) }
        queue.async { self.handle(event, on: socket) }
    }

    private func handle(_ event: WebSocketEvent, on socket: Machine.SocketID) {
        switch event {
        case .opened:
            withMachine { $0.socketOpened(socket) }
        case .message(_, let message):
            if !configuration.observesPresence, Self.isPresence(message.bytes) {
                if state.withLock({ $0.machine.accepts(socket) }) { skippedPresence.add(1, ordering: .relaxed) }
                return
            }
            let decoded: ServerMessage
            do {
                decoded = try ServerMessage.decode(message.bytes)
            } catch {
                return withMachine { $0.undecodable(error, on: socket) }
            }
            withMachine { $0.receive(decoded, on: socket, now: .now) }
        case .closed(_, let frame):
            withMachine { $0.socketClosed(socket, frame, now: .now) }
        }
    }

    private static let presencePrefix = Array(#"{"type":"presence""#.utf8)

    /// Whether a message is a `presence`: the server writes its `type` first. A message of another type that
    /// began this way would need its first member to be `type` with that value, so there are no false positives.
    static func isPresence(_ bytes: [UInt8]) -> Bool {
        bytes.count >= presencePrefix.count && bytes.prefix(presencePrefix.count).elementsEqual(presencePrefix)
    }
}
