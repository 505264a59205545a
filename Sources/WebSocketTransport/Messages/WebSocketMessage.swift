import CLibWebSockets
import MemoryBudget

/// An outbound WebSocket message, encoded once and shared by every connection it is sent to.
///
/// The payload sits in one heap buffer preceded by `LWS_PRE` bytes of headroom, so libwebsockets writes the
/// frame header in place and never copies the payload per connection. Sending one message to N connections
/// costs N reference-count increments and N queue appends.
///
/// The payload is immutable after `init`. The headroom is scratch space that only a service thread writes, and
/// every server connection writes the same header bytes into it (same opcode and length, no mask). Client
/// connections mask their payload, so the client role copies the message before writing it.
public final class WebSocketMessage: @unchecked Sendable {
    /// Whether the message is sent as a text or binary frame.
    public let kind: WebSocketMessageKind
    /// Payload length in bytes.
    public let count: Int
    /// Start of the allocation: `headroom` bytes, then the payload (or, with a `tail`, its first part).
    let storage: UnsafeMutableRawPointer
    /// The rest of the payload, shared with other messages: see ``init(kind:head:sharing:)``.
    let tail: WebSocketMessage?

    static let headroom = Int(CLibWebSockets_LWS_PRE())

    /// The account the buffer is counted in while it lives, however many queues hold it (see ``charge(to:)``).
    private var charge: MemoryCharge?

    /// Creates a message whose payload is written once by `initializer` into a buffer of exactly `count` bytes.
    /// This is the zero-copy path for encoders that know the size up front.
    public init(kind: WebSocketMessageKind, count: Int, initializer: (UnsafeMutableRawBufferPointer) -> Void) {
        precondition(count >= 0, "negative payload length")
        self.kind = kind
        self.count = count
        tail = nil
        storage = .allocate(byteCount: Self.headroom + count, alignment: 16)
        initializer(UnsafeMutableRawBufferPointer(start: storage + Self.headroom, count: count))
    }

    /// Creates a message whose payload is `head` followed by `tail`'s payload, which is not copied: many messages
    /// that differ only in a small head (the `ref` of a request) share one big encoding. The transport copies both
    /// parts as it writes them.
    public init(kind: WebSocketMessageKind, head: [UInt8], sharing tail: WebSocketMessage) {
        self.kind = kind
        count = head.count + tail.count
        self.tail = tail
        storage = .allocate(byteCount: Self.headroom + head.count, alignment: 16)
        head.withUnsafeBytes { bytes in
            if let base = bytes.baseAddress { (storage + Self.headroom).copyMemory(from: base, byteCount: head.count) }
        }
    }

    /// The bytes in this message's own buffer: all of them, or its head when it shares a tail.
    private var ownCount: Int { count - (tail?.count ?? 0) }

    /// Whether the whole payload is in this message's own buffer (at ``payload``).
    var isContiguous: Bool { tail == nil }

    /// Copies `length` bytes of the payload from `offset` to `destination`, across the head and the shared tail.
    func copyPayload(from offset: Int, count length: Int, to destination: UnsafeMutableRawPointer) {
        let own = max(0, min(length, ownCount - offset))
        if own > 0 { destination.copyMemory(from: payload + offset, byteCount: own) }
        if length > own, let tail {
            tail.copyPayload(from: offset + own - ownCount, count: length - own, to: destination + own)
        }
    }

    /// Creates a binary (or, with `kind: .text`, an already UTF-8 encoded text) message from bytes.
    ///
    /// Contiguous collections (arrays, slices) are copied with one `memcpy`; across the module boundary the generic
    /// element-by-element copy was a tenth of the server's time.
    public convenience init(kind: WebSocketMessageKind = .binary, bytes: some Collection<UInt8>) {
        self.init(kind: kind, count: bytes.count) { buffer in
            let copied =
                bytes.withContiguousStorageIfAvailable { source in
                    if let base = source.baseAddress {
                        buffer.baseAddress!.copyMemory(from: base, byteCount: source.count)
                    }
                    return true
                } ?? false
            if !copied { _ = buffer.initializeMemory(as: UInt8.self, from: bytes) }
        }
    }

    /// Creates a text message.
    public convenience init(text: String) {
        var text = text
        let count = text.utf8.count
        self.init(kind: .text, count: count) { buffer in
            text.withUTF8 { utf8 in
                if let base = utf8.baseAddress { buffer.baseAddress!.copyMemory(from: base, byteCount: count) }
            }
        }
    }

    deinit { storage.deallocate() }

    /// Counts the message's own buffer (not a shared tail, counted where it was made) in `account` until the
    /// message is freed: once, however many connections it is queued to; `onRelease` is called then (the last
    /// connection wrote or dropped it). Call it once, before the message is shared.
    public func charge(to account: MemoryBudget.Account, onRelease: (@Sendable () -> Void)? = nil) {
        precondition(charge == nil, "a message is charged to one account once")
        charge = MemoryCharge(Self.headroom + ownCount, to: account, onRelease: onRelease)
    }

    /// Whether the buffer is counted in an account already: queues count it as their entry's overhead only.
    var isCharged: Bool { charge != nil }

    /// The payload, without headroom.
    var payload: UnsafeMutableRawPointer { storage + Self.headroom }

    /// Calls `body` with the payload bytes (copied into one buffer first when the message shares a tail).
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        guard !isContiguous else { return try body(UnsafeRawBufferPointer(start: payload, count: count)) }
        let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: count, alignment: 1)
        defer { copy.deallocate() }
        if let base = copy.baseAddress { copyPayload(from: 0, count: count, to: base) }
        return try body(UnsafeRawBufferPointer(copy))
    }
}

/// The frame type of a WebSocket message.
public enum WebSocketMessageKind: Sendable, Hashable {
    case text
    case binary
}
