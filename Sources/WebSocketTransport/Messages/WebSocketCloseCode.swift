/// A WebSocket close status code (RFC 6455 section 7.4), with the codes this transport sends as static members.
public struct WebSocketCloseCode: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// The code as sent on the wire.
    public let rawValue: UInt16

    /// Any code, e.g. an application code in 4000–4999.
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// 1000: the purpose of the connection was fulfilled.
    public static let normalClosure = WebSocketCloseCode(rawValue: 1000)
    /// 1001: the server is shutting down (sent to every connection by a graceful shutdown).
    public static let goingAway = WebSocketCloseCode(rawValue: 1001)
    /// 1005: reported, never sent: the peer's close frame carried no code.
    public static let noStatusReceived = WebSocketCloseCode(rawValue: 1005)
    /// 1006: reported, never sent: the connection ended without a close frame (reset, failed connect,
    /// keepalive timeout).
    public static let abnormalClosure = WebSocketCloseCode(rawValue: 1006)
    /// 1015: reported, never sent: the TLS handshake failed; the reason says why (e.g. the server's certificate
    /// did not verify against the trusted CAs, or is for another name).
    public static let tlsHandshakeFailed = WebSocketCloseCode(rawValue: 1015)
    /// 1002: the peer broke the protocol (e.g. a close frame with a code no endpoint may send).
    public static let protocolError = WebSocketCloseCode(rawValue: 1002)
    /// 1007: a text message (or a close frame's reason) was not valid UTF-8.
    public static let invalidPayload = WebSocketCloseCode(rawValue: 1007)
    /// 1009: a message exceeded the configured maximum size.
    public static let messageTooBig = WebSocketCloseCode(rawValue: 1009)
    /// 4000: the peer read too slowly and its outbound queue passed its bound (bytes or messages); the queued
    /// messages were dropped. The reason is "outbound queue overflow". An application-range code (not 1008 or
    /// 1013) so that a client can tell this apart from any other close: it means "reconnect and resynchronise",
    /// because messages were lost.
    public static let slowConsumer = WebSocketCloseCode(rawValue: 4000)

    /// Whether an endpoint may put this code in a close frame (RFC 6455 §7.4.1 and §7.4.2, and the IANA registry):
    /// 1000–1003, 1007–1014 and 3000–4999. 1004–1006 and 1015 are reserved or only reported locally.
    public var maySend: Bool {
        switch rawValue {
        case 1000...1003, 1007...1014, 3000...4999: true
        default: false
        }
    }

    public var description: String { String(rawValue) }
}

/// Why a connection closed: the close code exchanged with the peer (or 1006 when none was) and its reason.
public struct WebSocketCloseFrame: Sendable, Hashable {
    /// The close code.
    public var code: WebSocketCloseCode
    /// The reason text (at most 123 UTF-8 bytes are sent).
    public var reason: String

    /// A close code with an optional reason.
    public init(code: WebSocketCloseCode, reason: String = "") {
        self.code = code
        self.reason = reason
    }
}

extension WebSocketCloseFrame {
    /// The close frame's payload: the code in network order and at most 123 bytes of reason (a control frame
    /// carries at most 125 bytes); empty for 1005, which stands for "no code".
    var payload: [UInt8] {
        guard code != .noStatusReceived else { return [] }
        return [UInt8(code.rawValue >> 8), UInt8(code.rawValue & 0xFF)] + reason.utf8.prefix(123)
    }
}
