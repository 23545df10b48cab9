/// Stops the program for a programmer error — a rule of the API broken, as Core Data raises
/// an exception for — printing `message` in every build configuration.
///
/// Not `preconditionFailure`: under `-O` it drops its message, and a release build that broke
/// a rule printed only "Fatal error", where the documentation promises a message naming the
/// object, the context and the rule.
@usableFromInline @inline(never)
package func programmerError(_ message: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line) -> Never {
    fatalError(message(), file: file, line: line)
}

/// Stops the program with `message` (see ``programmerError(_:file:line:)``) unless
/// `condition` holds.
@inline(__always)
package func programmerCheck(
    _ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line
) {
    if !condition() { programmerError(message(), file: file, line: line) }
}
