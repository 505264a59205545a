import TableModel
import TablecastProtocol

/// What an HTTP API request asks for, read from its method, path and query alone (see
/// `web-client-protocol/openapi.yaml`): each route is one request of the WebSocket protocol.
enum APIRoute: Hashable, Sendable {
    case listTables
    case createTable
    case dropTable(String)
    case setRules(String)
    case snapshot(String)
    case intent(String)
    case history(String, query: [String: String])
    case snapshotAt(String, version: UInt64)
    case events(String)
    case openAPI
    /// `GET /v1/schema/NAME`: one of the protocol's JSON Schemas, which the document refers to.
    case schema(String)

    /// The API's prefix.
    static let prefix = "/v1/"

    /// The route of `method` on `path` (with its `query`), or the refusal to answer with: 404 for a path the API
    /// does not have, 405 for a method its path does not take, 400 for a bad query.
    static func parse(method: String, path: String, query: String?) -> Result<APIRoute, APIRefusal> {
        guard path.hasPrefix(prefix) else { return .failure(.notFound(path)) }
        let parts = path.dropFirst(prefix.count).split(separator: "/", omittingEmptySubsequences: false).map {
            percentDecoded(String($0))
        }
        let read = method == "GET" || method == "HEAD"
        func only(_ allowed: [String], _ route: APIRoute) -> Result<APIRoute, APIRefusal> {
            allowed.contains(method) || (allowed.contains("GET") && method == "HEAD")
                ? .success(route) : .failure(.methodNotAllowed(method, path, allowed: allowed))
        }
        switch parts.count {
        case 1 where parts[0] == "tables":
            return read ? .success(.listTables) : only(["GET", "POST"], .createTable)
        case 1 where parts[0] == "openapi.yaml":
            return only(["GET"], .openAPI)
        case 2 where parts[0] == "schema" && !parts[1].isEmpty:
            return only(["GET"], .schema(parts[1]))
        case 2 where parts[0] == "tables" && !parts[1].isEmpty:
            return read ? .success(.snapshot(parts[1])) : only(["GET", "DELETE"], .dropTable(parts[1]))
        case 3 where parts[0] == "tables" && !parts[1].isEmpty:
            let table = parts[1]
            switch parts[2] {
            case "rules": return only(["PATCH"], .setRules(table))
            case "intents": return only(["POST"], .intent(table))
            // Never HEAD: a stream's headers come with its first event.
            case "events":
                return method == "GET"
                    ? .success(.events(table)) : .failure(.methodNotAllowed(method, path, allowed: ["GET"]))
            case "history":
                guard read else { return only(["GET"], .history(table, query: [:])) }
                return historyQuery(query).map { .history(table, query: $0) }
            case "snapshot":
                guard read else { return only(["GET"], .snapshotAt(table, version: 0)) }
                let arguments = queryArguments(query)
                guard let text = arguments["version"], let version = UInt64(text) else {
                    return .failure(.badQuery("query parameter 'version' (a version number) is required"))
                }
                return .success(.snapshotAt(table, version: version))
            default: return .failure(.notFound(path))
            }
        default:
            return .failure(.notFound(path))
        }
    }

    /// `GET /v1/tables/{t}`.
    var isSnapshot: Bool {
        if case .snapshot = self { true } else { false }
    }

    /// The table the route is about, if one.
    var table: String? {
        switch self {
        case .listTables, .createTable, .openAPI, .schema: nil
        case .dropTable(let table), .setRules(let table), .snapshot(let table), .intent(let table),
            .history(let table, _), .snapshotAt(let table, _), .events(let table):
            table
        }
    }

    /// `from`, `to` and `limit` must be whole numbers and `order` `newest` or `oldest`; nothing else.
    private static func historyQuery(_ query: String?) -> Result<[String: String], APIRefusal> {
        let arguments = queryArguments(query)
        for (name, value) in arguments {
            switch name {
            case "from", "to", "limit":
                guard UInt64(value) != nil else {
                    return .failure(.badQuery("query parameter '\(name)' must be a whole number"))
                }
            case "order":
                guard value == "newest" || value == "oldest" else {
                    return .failure(.badQuery("query parameter 'order' must be newest or oldest"))
                }
            default:
                return .failure(.badQuery("unknown query parameter '\(name)'"))
            }
        }
        return .success(arguments)
    }

    /// `a=1&b=2` by name; the last of repeated names wins.
    static func queryArguments(_ query: String?) -> [String: String] {
        var arguments: [String: String] = [:]
        for pair in (query ?? "").split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            arguments[percentDecoded(String(parts[0]))] = parts.count > 1 ? percentDecoded(String(parts[1])) : ""
        }
        return arguments
    }

    /// `%41` as `A`, `+` kept; a malformed escape (not `%` and two hex digits, RFC 3986 §2.1) is kept as it is.
    static func percentDecoded(_ text: String) -> String {
        guard text.contains("%") else { return text }
        var bytes: [UInt8] = []
        var utf8 = Array(text.utf8)[...]
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: "%"), utf8.count >= 2, let high = hexDigit(utf8.first!),
                let low = hexDigit(utf8.dropFirst().first!)
            {
                bytes.append(high << 4 | low)
                utf8 = utf8.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The value of one hex digit; nil for anything else (`UInt8(_:radix:)` would also take a sign: `%+1`).
    private static func hexDigit(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

/// An API request refused before it reaches a table, with its status.
enum APIRefusal: Error, Hashable, Sendable {
    case notFound(String)
    case methodNotAllowed(String, String, allowed: [String])
    case badQuery(String)

    var status: Int {
        switch self {
        case .notFound: 404
        case .methodNotAllowed: 405
        case .badQuery: 400
        }
    }

    var error: ProtocolError {
        switch self {
        case .notFound(let path): ProtocolError(.badRequest, "no such API path: \(path)")
        case .methodNotAllowed(let method, let path, let allowed):
            ProtocolError(.badRequest, "\(path) does not take \(method) (it takes \(allowed.joined(separator: ", ")))")
        case .badQuery(let message): ProtocolError(.badRequest, message)
        }
    }
}
