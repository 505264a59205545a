/// A complete message received from a peer, reassembled from its fragments. Text payloads are valid UTF-8.
public struct WebSocketInboundMessage: Sendable, Hashable {
    /// Whether the peer sent a text or a binary message.
    public let kind: WebSocketMessageKind
    /// The payload; for text, its UTF-8 encoding.
    public let bytes: [UInt8]

    /// Wraps a payload; the transport creates these, tests and adapters may too.
    public init(kind: WebSocketMessageKind, bytes: [UInt8]) {
        self.kind = kind
        self.bytes = bytes
    }

    /// The payload decoded as UTF-8 (the transport has already validated text messages).
    public var text: String { String(decoding: bytes, as: UTF8.self) }
}
