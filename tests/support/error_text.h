// Test helper: the message of the exception a piece of code must throw.
#pragma once

#include <exception>
#include <functional>
#include <string>

#include <gtest/gtest.h>

namespace bnn::testing {

// Runs `body`, which must throw, and returns the exception's message.
inline std::string error_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const std::exception& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an exception";
  return "";
}

// The message of what `body` throws, or "" if it throws nothing (for checks
// that some inputs are refused and others accepted).
inline std::string error_or_empty(const std::function<void()>& body) {
  try {
    body();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// `body` must throw an E whose message contains `text`.
template <typename E>
void expect_error(const std::function<void()>& body, const std::string& text) {
  try {
    body();
    ADD_FAILURE() << "expected an exception containing: " << text;
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
}

}  // namespace bnn::testing
