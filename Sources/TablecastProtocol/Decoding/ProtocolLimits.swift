/// Limits the decoder enforces on client messages, so hostile or buggy input is refused before it costs anything.
public struct ProtocolLimits: Hashable, Sendable {
    /// Most entries a `batch` may have across its lists (rows inside inserted sections included).
    public var maxBatchEntries: Int
    /// Longest `ref` a client may choose.
    public var maxRefLength: Int
    /// Longest client id and display name in `hello`.
    public var maxClientIDLength: Int
    /// Most entries one `history` request may ask for (its `limit`).
    public var maxHistoryEntries = 1_000
    /// Entries a `history` request without `limit` gets.
    public var defaultHistoryEntries = 100

    /// - Parameters:
    ///   - maxBatchEntries: default 1,000; beyond it a batch is refused with `limit_exceeded`.
    ///   - maxRefLength: default 64 characters.
    ///   - maxClientIDLength: default 64 characters, for client ids and names.
    public init(maxBatchEntries: Int = 1_000, maxRefLength: Int = 64, maxClientIDLength: Int = 64) {
        self.maxBatchEntries = maxBatchEntries
        self.maxRefLength = maxRefLength
        self.maxClientIDLength = maxClientIDLength
    }
}
