/// Per-connection limits the service thread enforces, shared by the server and client roles.
struct ConnectionLimits: Sendable {
    var maxMessageSize: Int
    var maxQueuedBytes: Int
    var maxQueuedMessages: Int
    /// Inbound messages delivered and not yet consumed at which reading pauses; nil: no bound on their number.
    var maxUnconsumedMessages: Int? = nil
    /// The same for their payload bytes; with both nil there is no inbound flow control.
    var maxUnconsumedBytes: Int? = nil
    /// How long a connection closed as a slow consumer may take to read the rest of the frame being written and
    /// the close frame before its socket is dropped.
    var slowConsumerCloseSeconds = 30

    /// Whether the application reports consumed messages and connections pause at the bounds.
    var hasInboundFlowControl: Bool { maxUnconsumedMessages != nil || maxUnconsumedBytes != nil }
}
