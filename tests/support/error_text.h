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

}  // namespace bnn::testing
