/// UTF-8 validation of a complete text message, without allocating (unlike decoding it into a `String`).
enum UTF8Validation {
    static func isValid(_ bytes: [UInt8]) -> Bool {
        (try? UTF8Span(validating: bytes.span)) != nil
    }
}
