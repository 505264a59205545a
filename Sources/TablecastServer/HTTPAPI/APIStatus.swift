import TableModel
import TablecastProtocol
import WebSocketTransport

/// How a refusal reads over HTTP: one status per wire error code, and the body `{code, message}` (with `at` when
/// an entry is at fault).
enum APIStatus {
    static func status(of code: ProtocolError.Code) -> Int {
        switch code {
        case .badRequest, .unknownType: 400
        case .unauthorized: 401
        case .forbidden: 403
        case .noSuchTable: 404
        case .tableExists, .conflict, .stale, .refReused: 409
        case .pruned: 410
        case .limitExceeded: 413
        case .outOfRange, .invalidBatch, .notEditable, .notMovable: 422
        case .rateLimited: 429
        case .unavailable: 503
        case .internal: 500
        }
    }

    /// Seconds a client should wait before trying again, for the codes that say to.
    static func retryAfter(_ code: ProtocolError.Code) -> Int? {
        switch code {
        case .rateLimited: 1
        case .unavailable: 5
        default: nil
        }
    }

    /// The reply for `error`, with `status` rather than the code's own when given.
    static func reply(_ error: ProtocolError, status: Int? = nil, headers: [HTTPHeader] = []) -> HTTPAPIReply {
        var body: [String: JSONValue] = ["code": .string(error.code.rawValue), "message": .string(error.message)]
        if let at = error.at { body["at"] = .string(at) }
        var headers = headers
        if let seconds = retryAfter(error.code) { headers.append(HTTPHeader("retry-after", String(seconds))) }
        return HTTPAPIReply(
            status: status ?? Self.status(of: error.code), headers: headers, body: JSONValue.object(body).jsonBytes)
    }
}
