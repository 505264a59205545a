// libFuzzer target for an HTTP API request as the gateway takes it (Sources/TablecastServer/HTTPAPI: the route, the
// `Last-Event-ID`, the request built as the WebSocket message the router decodes; built by scripts/fuzz.py). An
// input is a method (its first byte) and then, separated by line feeds: the path, the query, the
// `Idempotency-Key`, the `Last-Event-ID` and the body. Checked on every input:
// - nothing traps;
// - a request about a table is a message about that table and no other, whatever its body says, and carries the
//   `Idempotency-Key` as its ref if it is an intent, the API's own ref otherwise;
// - an event stream position reads back from its id.
import TableModel
import TablecastProtocol

let methods = ["GET", "HEAD", "POST", "DELETE", "PATCH", "PUT", "OPTIONS", "get"]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    guard count > 0 else { return 0 }
    let method = methods[Int(data[0]) % methods.count]
    let fields = UnsafeBufferPointer(start: data + 1, count: count - 1)
        .split(separator: UInt8(ascii: "\n"), maxSplits: 4, omittingEmptySubsequences: false)
    func text(_ index: Int) -> String? {
        index < fields.count ? String(decoding: fields[index], as: UTF8.self) : nil
    }
    let (path, query, key, lastEventID) = (text(0) ?? "", text(1), text(2), text(3))
    let body = fields.count > 4 ? Array(fields[4]) : []
    let resume = lastEventID.flatMap(EventStreamPosition.init(lastEventID:))
    if let resume {
        check(EventStreamPosition(lastEventID: resume.id) == resume, "the position \(resume) does not read back")
    }
    guard case .success(let route) = APIRoute.parse(method: method, path: path, query: query?.nilIfEmpty) else {
        return 0
    }
    guard case .success(let json) = APIRequest.message(for: route, body: body, idempotencyKey: key, resume: resume),
        let message = try? ClientMessage.decode(json.jsonBytes)
    else { return 0 }
    if let table = route.table {
        check(message.table == table, "\(method) \(path) became a message about \(String(describing: message.table))")
    }
    let ref = String(describing: message.ref)
    if case .intent = message.body {
        guard case .intent = route else { failure("\(method) \(path) became an intent") }
        check(message.ref == key, "an intent's ref is \(ref), its key \(String(describing: key))")
    } else {
        check(message.ref == APIRequest.ref, "\(method) \(path) became a message with ref \(ref)")
    }
    return 0
}

extension String {
    var nilIfEmpty: String? { isEmpty ? nil : self }
}
