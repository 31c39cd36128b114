(class_definition name: (identifier) @name) @definition.class
(enum_declaration name: (identifier) @name) @definition.class
(mixin_declaration (identifier) @name) @definition.class
(extension_declaration name: (identifier) @name) @definition.class
(method_signature (function_signature name: (identifier) @name)) @definition.method
(program (function_signature name: (identifier) @name) @definition.function)
(static_final_declaration (identifier) @name) @definition.constant
(_ (identifier) @name . (selector (argument_part))) @reference.call
(unconditional_assignable_selector (identifier) @name) @reference.call
(type_identifier) @name @reference.type
(uri (string_literal) @name) @reference.import
(string_literal) @literal
(method_signature (getter_signature name: (identifier) @name)) @definition.method
(method_signature (setter_signature name: (identifier) @name)) @definition.method
; The name right before the parameters: the class for `A(...)`, `named` for `A.named(...)`.
(constructor_signature (identifier) @name . (formal_parameter_list)) @definition.method
