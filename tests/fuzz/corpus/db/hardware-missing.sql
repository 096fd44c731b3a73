DELETE FROM hardware; DELETE FROM model_layer; DELETE FROM model;
