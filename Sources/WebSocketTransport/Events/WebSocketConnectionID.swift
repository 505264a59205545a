/// Identifies one WebSocket connection for the lifetime of a server or client; never reused.
public struct WebSocketConnectionID: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Assigned in increasing order, starting at 1.
    public let rawValue: UInt64

    /// Wraps a raw id, e.g. one read back from a log.
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    public var description: String { "ws#\(rawValue)" }
}
